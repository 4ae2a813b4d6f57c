package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: distroless's "nonroot", so that manifests written for
// distroless images (runAsUser: 65532) run this one unchanged.
const (
	uid      = 65532
	gid      = 65532
	user     = "65532:65532"
	binPath  = "usr/local/bin/sluice"
	spoolDir = "var/lib/sluice/spool"
	homeDir  = "home/nonroot"
	source   = "https://github.com/sluicehq/sluice"
)

// The image's /etc/passwd and /etc/group: root and nonroot. deploy/Dockerfile
// copies the same files (deploy/image/rootfs).
var (
	//go:embed rootfs/etc/passwd
	passwd []byte
	//go:embed rootfs/etc/group
	group []byte
)

// exposedPorts are sluice's default ports: REST, gRPC and the admin
// listener (metrics, health). Its defaults bind loopback, so a container's
// config names an address such as ":8080" for each one it serves.
var exposedPorts = []string{"8080/tcp", "9090/tcp", "9100/tcp"}

// Options is what Build builds.
type Options struct {
	Src       string        // the checkout; "" is the git top-level of the working directory
	Platforms []v1.Platform // linux only: the binary is built for these
	Name      string        // repository for index.json's ref.name; the tag is the version
	Log       io.Writer     // progress; nil discards it
}

// Result is what Build wrote.
type Result struct {
	Path     string
	Index    v1.Hash // the multi-arch image index
	Size     int64   // of the tar file
	Version  string  // the main module's version, as stamped by go build
	Revision string
	Created  time.Time
	Modified bool // the tree had uncommitted changes
	Images   []PlatformImage
}

// PlatformImage is one platform's image in the index.
type PlatformImage struct {
	Platform   v1.Platform
	Manifest   v1.Hash
	BinarySize int64
	LayerSize  int64 // compressed, as a registry stores it
}

// Print writes the result as the build's summary.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "wrote %s (%s, OCI image layout)\n", r.Path, mib(r.Size))
	fmt.Fprintf(w, "index    %s\n", r.Index)
	fmt.Fprintf(w, "version  %s\n", r.Version)
	fmt.Fprintf(w, "revision %s\n", r.Revision)
	fmt.Fprintf(w, "created  %s\n", r.Created.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "platform\tmanifest\tbinary\tlayer (gzip)")
	for _, im := range r.Images {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", platformString(im.Platform), im.Manifest, mib(im.BinarySize), mib(im.LayerSize))
	}
	tw.Flush()
	if r.Modified {
		fmt.Fprintln(w, "warning: the tree has uncommitted changes; this image is not the commit's")
	}
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// parsePlatform reads os/arch; arm64 gets the variant v8, as the
// registries' own multi-arch images name it.
func parsePlatform(s string) (v1.Platform, error) {
	osName, arch, ok := strings.Cut(s, "/")
	if !ok || osName != "linux" || arch == "" || strings.Contains(arch, "/") {
		return v1.Platform{}, fmt.Errorf("platform %q: want linux/ARCH", s)
	}
	p := v1.Platform{OS: osName, Architecture: arch}
	if arch == "arm64" {
		p.Variant = "v8"
	}
	return p, nil
}

// Build compiles sluice for each platform and writes the image index to
// out as an OCI layout tar file.
func Build(ctx context.Context, o Options, out string) (*Result, error) {
	if len(o.Platforms) == 0 {
		return nil, errors.New("no platforms")
	}
	logw := o.Log
	if logw == nil {
		logw = io.Discard
	}
	src := o.Src
	if src == "" {
		top, err := exec.CommandContext(ctx, "git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			return nil, fmt.Errorf("finding the checkout (git rev-parse --show-toplevel): %w", err)
		}
		src = strings.TrimSpace(string(top))
	}
	tmp, err := os.MkdirTemp("", "sluice-image-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	res := &Result{Path: out}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var labels map[string]string
	for i, p := range o.Platforms {
		bin := filepath.Join(tmp, "sluice-"+p.OS+"-"+p.Architecture)
		fmt.Fprintf(logw, "go build %s\n", platformString(p))
		if err := goBuild(ctx, src, p, bin); err != nil {
			return nil, err
		}
		st, err := stamp(bin)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			res.Version, res.Revision, res.Created, res.Modified = st.version, st.revision, st.created, st.modified
			labels = map[string]string{
				"org.opencontainers.image.title":       "sluice",
				"org.opencontainers.image.description": "sluice, the ingestion gateway: validated events to Kafka",
				"org.opencontainers.image.source":      source,
				"org.opencontainers.image.revision":    st.revision,
				"org.opencontainers.image.version":     st.version,
				"org.opencontainers.image.created":     st.created.Format(time.RFC3339),
			}
		} else if st != (buildStamp{res.Version, res.Revision, res.Created, res.Modified}) {
			return nil, fmt.Errorf("%s: the build stamps %+v, the first platform's %s %s", platformString(p), st, res.Version, res.Revision)
		}
		img, pi, err := platformImage(bin, p, res.Created, labels)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", platformString(p), err)
		}
		res.Images = append(res.Images, pi)
		desc := v1.Descriptor{MediaType: types.OCIManifestSchema1, Digest: pi.Manifest, Platform: &p}
		if desc.Size, err = img.Size(); err != nil {
			return nil, err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        describedImage{img, desc},
			Descriptor: desc,
		})
	}
	idx = mutate.Annotations(idx, labels).(v1.ImageIndex)
	if res.Index, err = idx.Digest(); err != nil {
		return nil, err
	}
	if res.Size, err = writeLayout(out, idx, refName(o.Name, res.Version), res.Created); err != nil {
		return nil, err
	}
	return res, nil
}

// describedImage is an image with the index's descriptor of it as a
// plain image manifest's: go-containerregistry would otherwise give it an
// artifactType (its config's media type), which images in an index do not
// carry.
type describedImage struct {
	v1.Image
	desc v1.Descriptor
}

func (d describedImage) Descriptor() (*v1.Descriptor, error) { return &d.desc, nil }

// refName is index.json's name for the image: the repository, tagged with
// the version where it is a valid tag (a dirty tree's "+dirty" is not).
func refName(repo, version string) string {
	if repo == "" {
		return ""
	}
	return repo + ":" + strings.ReplaceAll(version, "+", "-")
}

// goBuild cross-compiles cmd/sluice as the image carries it. The
// environment's GOFLAGS is replaced, so that a -buildvcs=false there does
// not drop the VCS stamp the labels are read from; GOAMD64 and GOARM64
// are the baselines, whatever the builder's environment says.
func goBuild(ctx context.Context, src string, p v1.Platform, bin string) error {
	cmd := exec.CommandContext(ctx, "go", "build",
		"-trimpath", "-buildvcs=true", "-ldflags=-s -w",
		"-o", bin, "./cmd/sluice")
	cmd.Dir = src
	cmd.Env = append(os.Environ(),
		"CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture,
		"GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=-mod=readonly")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build for %s: %w\n%s", platformString(p), err, b)
	}
	return nil
}

type buildStamp struct {
	version, revision string
	created           time.Time
	modified          bool
}

// stamp reads the binary's build info: the version and the VCS stamp are
// the image's labels and times.
func stamp(bin string) (buildStamp, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return buildStamp{}, err
	}
	st := buildStamp{version: bi.Main.Version}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			st.revision = s.Value
		case "vcs.time":
			if st.created, err = time.Parse(time.RFC3339, s.Value); err != nil {
				return buildStamp{}, fmt.Errorf("vcs.time %q: %w", s.Value, err)
			}
		case "vcs.modified":
			st.modified = s.Value == "true"
		}
	}
	if st.revision == "" || st.created.IsZero() {
		return buildStamp{}, errors.New("the binary has no VCS stamp (vcs.revision, vcs.time): build from a git clone " +
			"(go stamps only a checkout whose .git is a directory: not a git worktree, not an export)")
	}
	st.created = st.created.UTC()
	return st, nil
}

// platformImage is one platform's image: one layer on no base, and its
// config.
func platformImage(bin string, p v1.Platform, created time.Time, labels map[string]string) (v1.Image, PlatformImage, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, PlatformImage{}, err
	}
	gz, err := layerTar(binary, created)
	if err != nil {
		return nil, PlatformImage{}, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gz)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, PlatformImage{}, err
	}
	t := v1.Time{Time: created}
	cfg := &v1.ConfigFile{
		Architecture: p.Architecture,
		OS:           p.OS,
		Variant:      p.Variant,
		Created:      t,
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			User:         user,
			Entrypoint:   []string{"/" + binPath},
			WorkingDir:   "/" + homeDir,
			Env:          []string{"PATH=/usr/local/bin"},
			ExposedPorts: map[string]struct{}{},
			Labels:       labels,
		},
	}
	for _, port := range exposedPorts {
		cfg.Config.ExposedPorts[port] = struct{}{}
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, PlatformImage{}, err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   t,
			CreatedBy: "deploy/image: sluice " + labels["org.opencontainers.image.version"],
			Comment:   "static binary, passwd and group for 65532, /tmp, the spool directory",
		},
	})
	if err != nil {
		return nil, PlatformImage{}, err
	}
	d, err := img.Digest()
	if err != nil {
		return nil, PlatformImage{}, err
	}
	return img, PlatformImage{Platform: p, Manifest: d, BinarySize: int64(len(binary)), LayerSize: int64(len(gz))}, nil
}

// layerTar is the image's one layer, gzipped. Entries are in a fixed
// order, every time is the commit's, and no owner names are written, so
// that the same binary gives the same bytes.
func layerTar(binary []byte, mtime time.Time) ([]byte, error) {
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		body     []byte // nil: a directory
	}
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, body: group},
		{name: "etc/passwd", mode: 0o644, body: passwd},
		{name: "home/", mode: 0o755},
		{name: homeDir + "/", mode: 0o700, uid: uid, gid: gid},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: binPath, mode: 0o755, body: binary},
		{name: "var/", mode: 0o755},
		{name: "var/lib/", mode: 0o755},
		{name: "var/lib/sluice/", mode: 0o755, uid: uid, gid: gid},
		{name: spoolDir + "/", mode: 0o700, uid: uid, gid: gid},
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.body == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
