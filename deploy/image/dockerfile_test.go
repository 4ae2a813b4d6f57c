package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDockerfileMatchesTheImage holds deploy/Dockerfile's final stage to
// the image this command builds: no base, the same user, entrypoint,
// working directory, ports and /etc files, and the same directories.
func TestDockerfileMatchesTheImage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	// Instructions of the final stage, continuation lines joined.
	var final, all []string
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if line == "" && (l == "" || strings.HasPrefix(l, "#")) {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			line += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		in := strings.Join(strings.Fields(line+l), " ")
		line = ""
		all = append(all, in)
		if strings.HasPrefix(strings.ToUpper(in), "FROM ") {
			final = nil
		}
		final = append(final, in)
	}
	if len(final) == 0 || final[0] != "FROM scratch" {
		t.Fatalf("final stage %q: want FROM scratch (no base image to pin)", final)
	}
	var entrypoint []string
	want := map[string]string{
		"USER":    user,
		"WORKDIR": "/" + homeDir,
		"EXPOSE":  strings.Join(exposedPorts, " "),
	}
	got := map[string]string{}
	for _, in := range final[1:] {
		cmd, args, _ := strings.Cut(in, " ")
		switch cmd {
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(args), &entrypoint); err != nil {
				t.Errorf("ENTRYPOINT %s: %v", args, err)
			}
		case "USER", "WORKDIR", "EXPOSE":
			got[cmd] = args
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s %q: the image has %q", k, got[k], v)
		}
	}
	if !slices.Equal(entrypoint, []string{"/" + binPath}) {
		t.Errorf("ENTRYPOINT %v: the image has [/%s]", entrypoint, binPath)
	}
	for _, in := range []string{
		"COPY deploy/image/rootfs/ /",
		"COPY --from=build /out/root/ /",
		"COPY --from=build --chown=65532:65532 /out/home/ /home/",
		"COPY --from=build --chown=65532:65532 /out/state/ /var/lib/sluice/",
		"COPY --from=build /out/sluice /" + binPath,
	} {
		if !slices.Contains(final, in) {
			t.Errorf("the final stage has no %q", in)
		}
	}
	for _, in := range []string{
		"RUN mkdir -p -m 1777 /out/root/tmp",
		"RUN mkdir -p -m 0700 /out/home/nonroot /out/state/spool",
	} {
		if !slices.Contains(all, in) {
			t.Errorf("the build stage has no %q", in)
		}
	}
}
