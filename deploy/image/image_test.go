package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestImage builds the image for linux/amd64 and linux/arm64 twice, from
// the checkout's HEAD, and checks the layout, each platform's config and
// layer, the binary in it, and that both builds are the same bytes.
//
// It costs two cross builds of cmd/sluice (the second build links again
// from the build cache). SLUICE_SKIP_IMAGE_BUILD=1 skips it, for a CI
// that runs it once already by .ci/steps/image.sh.
func TestImage(t *testing.T) {
	if testing.Short() || os.Getenv("SLUICE_SKIP_IMAGE_BUILD") == "1" {
		t.Skip("builds sluice for two platforms; .ci/steps/image.sh runs it")
	}
	src, head := checkout(t)
	var platforms []v1.Platform
	for _, p := range []string{"linux/amd64", "linux/arm64"} {
		pl, err := parsePlatform(p)
		if err != nil {
			t.Fatal(err)
		}
		platforms = append(platforms, pl)
	}
	dir := t.TempDir()
	var results []*Result
	for _, name := range []string{"first.tar", "second.tar"} {
		res, err := Build(context.Background(), Options{Src: src, Platforms: platforms, Name: "example.test/sluice"}, filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	var summary bytes.Buffer
	results[0].Print(&summary)
	t.Logf("\n%s", summary.String())

	// Reproducible: the same commit gives the same index and the same file.
	if a, b := results[0].Index, results[1].Index; a != b {
		t.Errorf("two builds of %s: index %s, then %s", head, a, b)
	}
	first, _ := os.ReadFile(results[0].Path)
	second, _ := os.ReadFile(results[1].Path)
	if !bytes.Equal(first, second) {
		t.Errorf("two builds of %s wrote different layout tar files", head)
	}

	lp := unpack(t, results[0].Path)
	top, err := layout.ImageIndexFromPath(lp)
	if err != nil {
		t.Fatal(err)
	}
	topm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topm.Manifests) != 1 || topm.Manifests[0].MediaType != types.OCIImageIndex {
		t.Fatalf("index.json: %+v: want one image index", topm.Manifests)
	}
	if got := topm.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; !strings.HasPrefix(got, "example.test/sluice:v") {
		t.Errorf("index.json ref.name %q: want the repository tagged with the version", got)
	}
	if topm.Manifests[0].Digest != results[0].Index {
		t.Errorf("index.json names %s, the build reported %s", topm.Manifests[0].Digest, results[0].Index)
	}
	idx, err := top.ImageIndex(topm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s has no platform", d.Digest)
		}
		got = append(got, platformString(*d.Platform))
		if d.MediaType != types.OCIManifestSchema1 || d.ArtifactType != "" {
			t.Errorf("manifest %s: media type %s, artifactType %q: want a plain OCI image manifest", d.Digest, d.MediaType, d.ArtifactType)
		}
	}
	if want := []string{"linux/amd64", "linux/arm64/v8"}; !slices.Equal(got, want) {
		t.Fatalf("the index's platforms are %v, want %v", got, want)
	}
	for _, d := range im.Manifests {
		t.Run(d.Platform.Architecture, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, img, *d.Platform, head)
		})
	}
}

// checkout is the repository to build and its HEAD. go build stamps VCS
// information only where .git is a directory, so a git worktree (whose
// .git is a file) is cloned first; the image is HEAD's either way.
func checkout(t *testing.T) (src, head string) {
	t.Helper()
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	src = git(".", "rev-parse", "--show-toplevel")
	head = git(src, "rev-parse", "HEAD")
	if fi, err := os.Stat(filepath.Join(src, ".git")); err != nil || !fi.IsDir() {
		clone := filepath.Join(t.TempDir(), "sluice")
		git(".", "clone", "--quiet", src, clone)
		git(clone, "checkout", "--quiet", "--detach", head)
		src = clone
	}
	return src, head
}

func unpack(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(h.Name, "..") || filepath.IsAbs(h.Name) {
			t.Fatalf("layout tar entry %q", h.Name)
		}
		p := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(tr); err == nil {
				err = os.WriteFile(p, b, 0o644)
			}
		default:
			t.Fatalf("layout tar entry %q of type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func checkImage(t *testing.T, img v1.Image, p v1.Platform, head string) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture || cf.Variant != p.Variant {
		t.Errorf("config platform %s/%s/%s, the index says %s", cf.OS, cf.Architecture, cf.Variant, platformString(p))
	}
	c := cf.Config
	m := regexp.MustCompile(`^([0-9]+):([0-9]+)$`).FindStringSubmatch(c.User)
	if m == nil || m[1] == "0" || m[2] == "0" {
		t.Errorf("User %q: want a numeric non-root uid:gid (runAsNonRoot can only verify a number)", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/sluice"}) {
		t.Errorf("Entrypoint %v", c.Entrypoint)
	}
	if c.WorkingDir == "" {
		t.Error("no WorkingDir")
	}
	for _, port := range []string{"8080/tcp", "9090/tcp", "9100/tcp"} {
		if _, ok := c.ExposedPorts[port]; !ok {
			t.Errorf("ExposedPorts %v: no %s", c.ExposedPorts, port)
		}
	}
	if got := c.Labels["org.opencontainers.image.revision"]; got != head {
		t.Errorf("revision label %q, HEAD is %s", got, head)
	}
	if got := c.Labels["org.opencontainers.image.source"]; got != "https://github.com/sluicehq/sluice" {
		t.Errorf("source label %q", got)
	}
	for _, k := range []string{"version", "created"} {
		if c.Labels["org.opencontainers.image."+k] == "" {
			t.Errorf("no org.opencontainers.image.%s label", k)
		}
	}

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want one (no base)", len(layers))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
	}
	files := readLayer(t, layers[0])
	for name, want := range map[string]struct {
		typ      byte
		mode     int64
		uid, gid int
	}{
		"etc/passwd":            {tar.TypeReg, 0o644, 0, 0},
		"etc/group":             {tar.TypeReg, 0o644, 0, 0},
		"tmp/":                  {tar.TypeDir, 0o1777, 0, 0},
		"home/nonroot/":         {tar.TypeDir, 0o700, 65532, 65532},
		"var/lib/sluice/spool/": {tar.TypeDir, 0o700, 65532, 65532},
		"usr/local/bin/sluice":  {tar.TypeReg, 0o755, 0, 0},
		"usr/local/bin/":        {tar.TypeDir, 0o755, 0, 0},
		"var/lib/sluice/":       {tar.TypeDir, 0o755, 65532, 65532},
		"home/":                 {tar.TypeDir, 0o755, 0, 0},
		"usr/":                  {tar.TypeDir, 0o755, 0, 0},
	} {
		f, ok := files[name]
		if !ok {
			t.Errorf("the layer has no %s", name)
			continue
		}
		if f.h.Typeflag != want.typ || f.h.Mode != want.mode || f.h.Uid != want.uid || f.h.Gid != want.gid {
			t.Errorf("%s: type %c mode %o owner %d:%d, want %c %o %d:%d", name, f.h.Typeflag, f.h.Mode, f.h.Uid, f.h.Gid, want.typ, want.mode, want.uid, want.gid)
		}
	}
	created, err := time.Parse(time.RFC3339, c.Labels["org.opencontainers.image.created"])
	if err != nil {
		t.Errorf("created label: %v", err)
	}
	if !cf.Created.Time.Equal(created) {
		t.Errorf("config created %s, label %s", cf.Created.Time, created)
	}
	for name, f := range files {
		if !f.h.ModTime.Equal(created) {
			t.Errorf("%s: mtime %s, want the commit's time %s (reproducible)", name, f.h.ModTime, created)
		}
	}
	if !strings.Contains(string(files["etc/passwd"].body), "nonroot:x:"+m[1]+":"+m[2]+":") {
		t.Errorf("/etc/passwd has no entry for User %s:\n%s", c.User, files["etc/passwd"].body)
	}
	if !strings.Contains(string(files["etc/group"].body), "nonroot:x:"+m[2]+":") {
		t.Errorf("/etc/group has no entry for gid %s:\n%s", m[2], files["etc/group"].body)
	}

	bin := filepath.Join(t.TempDir(), "sluice")
	if err := os.WriteFile(bin, files["usr/local/bin/sluice"].body, 0o755); err != nil {
		t.Fatal(err)
	}
	checkBinary(t, bin, p.Architecture, head)
	if p.Architecture == runtime.GOARCH && runtime.GOOS == "linux" {
		out, err := exec.Command(bin, "help").CombinedOutput()
		if err != nil {
			t.Errorf("sluice help from the layer: %v\n%s", err, out)
		}
	}
}

type layerFile struct {
	h    *tar.Header
	body []byte
}

func readLayer(t *testing.T, l v1.Layer) map[string]layerFile {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]layerFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = layerFile{h, b}
	}
}

// checkBinary: an ELF of the platform's machine, static, built as the
// image promises, and stamped with the checkout's revision.
func checkBinary(t *testing.T, bin, arch, head string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]; f.Machine != want {
		t.Errorf("ELF machine %v, want %v", f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static (the image has no libc)", p.Type)
		}
	}
	if f.Section(".dynamic") != nil || f.Section(".interp") != nil {
		t.Error("the binary has a .dynamic or .interp section: it is not static")
	}

	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	for k, want := range map[string]string{
		"GOOS": "linux", "GOARCH": arch, "CGO_ENABLED": "0", "-trimpath": "true", "vcs": "git", "vcs.revision": head,
	} {
		if settings[k] != want {
			t.Errorf("build info %s=%q, want %q", k, settings[k], want)
		}
	}
	if !strings.HasSuffix(settings["-pgo"], "default.pgo") {
		t.Errorf("build info -pgo=%q: want cmd/sluice/default.pgo (-pgo=auto)", settings["-pgo"])
	}
	if bi.Path != "github.com/sluicehq/sluice/cmd/sluice" {
		t.Errorf("build info path %s", bi.Path)
	}
	// A scratch image has no CA bundle: the binary carries its roots.
	if !slices.ContainsFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" }) {
		t.Error("the binary does not link golang.org/x/crypto/x509roots/fallback: HTTPS calls would find no roots in the image")
	}
}

func TestParsePlatform(t *testing.T) {
	for in, want := range map[string]string{
		"linux/amd64":  "linux/amd64",
		"linux/arm64":  "linux/arm64/v8",
		"darwin/arm64": "",
		"linux":        "",
		"linux/arm/v7": "",
	} {
		p, err := parsePlatform(in)
		if want == "" {
			if err == nil {
				t.Errorf("parsePlatform(%q) = %v, want an error", in, p)
			}
			continue
		}
		if err != nil || platformString(p) != want {
			t.Errorf("parsePlatform(%q) = %v, %v; want %s", in, p, err, want)
		}
	}
}
