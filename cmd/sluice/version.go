package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// runVersionCmd is `sluice version`: what the binary is, from the build
// information the Go toolchain stamps into it.
func runVersionCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) != 0 {
		return fmt.Errorf("version: unexpected argument %q", args[0])
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("version: the binary carries no build information")
	}
	fmt.Fprint(stdout, versionText(info, runtime.GOOS+"/"+runtime.GOARCH))
	return nil
}

// versionText is the answer of `sluice version` for info, on platform
// (GOOS/GOARCH). A binary built by `go install …@v1.2.3` carries its
// module version and no VCS settings; one built in a checkout carries
// "(devel)" (or, since Go 1.24, a pseudo-version of the commit) and the
// commit, its time (vcs.time: the build time the toolchain records) and
// whether the tree had changes ("+dirty"). What the build does not say
// is "unknown" (a build with -buildvcs=false carries no VCS settings).
func versionText(info *debug.BuildInfo, platform string) string {
	version := info.Main.Version
	if version == "" {
		version = "unknown"
	}
	commit, committed, dirty := "unknown", "unknown", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.time":
			committed = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		commit += "+dirty"
	}
	goVersion := info.GoVersion
	if goVersion == "" {
		goVersion = runtime.Version()
	}
	return fmt.Sprintf("sluice %s\ncommit:       %s\ncommit time:  %s\ngo:           %s %s\n", version, commit, committed, goVersion, platform)
}
