package doccheck

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLinks: every relative link and anchor of every tracked Markdown
// file resolves.
func TestLinks(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files under %s: %v", len(files), root, files)
	}
	problems, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	t.Logf("checked %d files", len(files))
}

// markdownFiles are the *.md files git tracks, or, outside a git
// checkout, those under root but for .git, testdata and third_party.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f == "" {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, f)); err == nil { // deleted, not yet committed
				files = append(files, f)
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "third_party" || d.Name() == "bench-out") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel(root, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestCheckFindsBrokenLinks: a missing file, a missing anchor in the same
// page and in another, a dangling reference and a link out of the
// repository are reported; good links, code and external links are not.
func TestCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "# Top\n\n"+
		"[ok](docs/b.md) [ok](docs/b.md#the-api-v1events) [ok](#top) [ok](#top-1) [ok](https://example.com/x.md#nope)\n"+
		"[ok](docs/b.md#kept) ![ok](docs/img.png)\n"+
		"## Top\n\n"+
		"[bad](docs/missing.md)\n"+
		"[bad](#nowhere)\n"+
		"[bad](docs/b.md#no-such-heading)\n"+
		"`[not a link](nowhere.md)`\n"+
		"```sh\n[not a link](nowhere.md)\n```\n"+
		"[ref]: docs/gone.md\n")
	write("docs/b.md", "# The API: `/v1/events`\n\n<a id=\"kept\"></a>\n[up](../README.md#top) [bad](../../outside.md)\n")
	write("docs/img.png", "")
	problems, err := Check(root, []string{"README.md", "docs/b.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"README.md:7: docs/missing.md: no such file docs/missing.md",
		"README.md:8: #nowhere: no heading or <a id> nowhere in README.md",
		"README.md:9: docs/b.md#no-such-heading: no heading or <a id> no-such-heading in docs/b.md",
		"README.md:14: docs/gone.md: no such file docs/gone.md",
		"docs/b.md:4: ../../outside.md: leaves the repository",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Security: TLS, mTLS, SASL, and what start-up refuses", "security-tls-mtls-sasl-and-what-start-up-refuses"},
		{"The API's description: /openapi.json and /docs", "the-apis-description-openapijson-and-docs"},
		{"Where is my event: `sluice trace`", "where-is-my-event-sluice-trace"},
		{"Overload: open loop at 2 × the measured maximum", "overload-open-loop-at-2--the-measured-maximum"},
		{"snake_case and [a link](x.md)", "snake_case-and-a-link"},
		{"SluiceContractReloadRefused", "sluicecontractreloadrefused"},
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}
