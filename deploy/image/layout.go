package main

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// writeLayout writes idx as an OCI image layout in a tar file: oci-layout,
// index.json (one entry, the image index, named ref when ref is not "")
// and blobs/sha256/*, sorted, every time mtime. The file is written to a
// temporary name beside out and renamed, so a failed build leaves no
// half-written image under the name. It returns the file's size.
func writeLayout(out string, idx v1.ImageIndex, ref string, mtime time.Time) (int64, error) {
	blobs := map[v1.Hash][]byte{}
	rawIndex, err := idx.RawManifest()
	if err != nil {
		return 0, err
	}
	idxDigest, err := idx.Digest()
	if err != nil {
		return 0, err
	}
	blobs[idxDigest] = rawIndex
	im, err := idx.IndexManifest()
	if err != nil {
		return 0, err
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return 0, err
		}
		raw, err := img.RawManifest()
		if err != nil {
			return 0, err
		}
		blobs[d.Digest] = raw
		cfgName, err := img.ConfigName()
		if err != nil {
			return 0, err
		}
		if blobs[cfgName], err = img.RawConfigFile(); err != nil {
			return 0, err
		}
		layers, err := img.Layers()
		if err != nil {
			return 0, err
		}
		for _, l := range layers {
			ld, err := l.Digest()
			if err != nil {
				return 0, err
			}
			rc, err := l.Compressed()
			if err != nil {
				return 0, err
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return 0, err
			}
			blobs[ld] = b
		}
	}

	top := v1.Descriptor{MediaType: types.OCIImageIndex, Digest: idxDigest, Size: int64(len(rawIndex))}
	if ref != "" {
		top.Annotations = map[string]string{"org.opencontainers.image.ref.name": ref}
	}
	indexJSON, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests:     []v1.Descriptor{top},
	})
	if err != nil {
		return 0, err
	}

	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	tw := tar.NewWriter(f)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return 0, err
	}
	if err := file("index.json", indexJSON); err != nil {
		return 0, err
	}
	if err := dir("blobs/"); err != nil {
		return 0, err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return 0, err
	}
	names := make([]v1.Hash, 0, len(blobs))
	for h := range blobs {
		names = append(names, h)
	}
	sort.Slice(names, func(i, j int) bool { return names[i].Hex < names[j].Hex })
	for _, h := range names {
		if h.Algorithm != "sha256" {
			return 0, fmt.Errorf("blob %s: only sha256 is written", h)
		}
		if err := file("blobs/sha256/"+h.Hex, blobs[h]); err != nil {
			return 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	if err := f.Chmod(0o644); err != nil {
		return 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return 0, err
	}
	return st.Size(), nil
}
