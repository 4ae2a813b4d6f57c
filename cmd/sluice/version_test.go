package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"
)

// versionText says what a binary is, from either kind of build: one of
// `go install …@version` (a module version, no VCS settings) and one in a
// checkout ((devel), the commit, its time, whether the tree had changes).
func TestVersionText(t *testing.T) {
	for _, tc := range []struct {
		name string
		info debug.BuildInfo
		want string
	}{{
		name: "go install @version",
		info: debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "github.com/sluicehq/sluice", Version: "v0.4.0"}},
		want: "sluice v0.4.0\ncommit:       unknown\ncommit time:  unknown\ngo:           go1.25.1 linux/arm64\n",
	}, {
		name: "checkout, clean",
		info: debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "696fa53c0ffee"},
			{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "false"}}},
		want: "sluice (devel)\ncommit:       696fa53c0ffee\ncommit time:  2026-12-01T10:00:00Z\ngo:           go1.25.1 linux/arm64\n",
	}, {
		name: "checkout, changed tree",
		info: debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "696fa53c0ffee"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
		want: "sluice (devel)\ncommit:       696fa53c0ffee+dirty\ncommit time:  2026-12-01T10:00:00Z\ngo:           go1.25.1 linux/arm64\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionText(&tc.info, "linux/arm64"); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// `sluice version`, --version and -v print the running binary's version
// (a test binary's main module version is "(devel)" or empty).
func TestVersionCommand(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-v"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, &stdout, &stderr)
		if code := exitCode(err, &stderr); code != 0 {
			t.Fatalf("sluice %s: exit %d, %v %s", args[0], code, err, stderr.String())
		}
		out := stdout.String()
		if !strings.HasPrefix(out, "sluice ") || !strings.Contains(out, "\ncommit:       ") || !strings.Contains(out, "\ngo:           go") {
			t.Errorf("sluice %s printed %q", args[0], out)
		}
	}
}
