package kubernetes_test

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ cmd, args string }

// stage is one FROM and what follows it.
type stage struct {
	base, name string
	body       []instruction
}

func parseDockerfile(t *testing.T) []stage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var stages []stage
	var line string
	for _, l := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(l)
		if line == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			line += strings.TrimSuffix(trimmed, "\\") + " "
			continue
		}
		line += trimmed
		cmd, args, _ := strings.Cut(line, " ")
		line = ""
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args)}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{base: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			t.Fatalf("Dockerfile: %s before FROM", in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	return stages
}

// words splits a shell command line: whitespace, and double or single
// quotes that group (the Dockerfile's RUN lines use no other shell syntax).
func words(t *testing.T, s string) []string {
	t.Helper()
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case strings.ContainsRune(";&|$`<>()", r):
			t.Fatalf("RUN %q: shell syntax %q that this test does not follow", s, r)
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		t.Fatalf("RUN %q: unterminated quote", s)
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// dockerBuild is the Dockerfile's `go build` of the binary the final stage
// runs: its arguments (output path apart) and the ENV of its stage.
type dockerBuild struct {
	args   []string // after "go build", without -o and its value
	output string
	env    []string
}

func buildOfDockerfile(t *testing.T, stages []stage) dockerBuild {
	t.Helper()
	final := stages[len(stages)-1]
	var from, src string
	for _, in := range final.body {
		if in.cmd == "COPY" && strings.HasPrefix(in.args, "--from=") {
			f := strings.Fields(in.args)
			from, src = strings.TrimPrefix(f[0], "--from="), f[1]
		}
	}
	i := slices.IndexFunc(stages, func(s stage) bool { return s.name == from })
	if i < 0 {
		t.Fatalf("final stage copies from %q, which is no stage", from)
	}
	var b dockerBuild
	for _, in := range stages[i].body {
		switch in.cmd {
		case "ENV":
			for _, kv := range strings.Fields(in.args) {
				if !strings.Contains(kv, "=") {
					t.Fatalf("ENV %q: only KEY=VALUE is followed here", in.args)
				}
				b.env = append(b.env, kv)
			}
		case "RUN":
			w := words(t, in.args)
			if len(w) < 2 || w[0] != "go" || w[1] != "build" {
				continue
			}
			for j := 2; j < len(w); j++ {
				if w[j] == "-o" && j+1 < len(w) {
					b.output = w[j+1]
					j++
					continue
				}
				b.args = append(b.args, w[j])
			}
		}
	}
	if b.output != src {
		t.Fatalf("the final stage copies %s, the go build writes %q", src, b.output)
	}
	return b
}

var built struct {
	once sync.Once
	path string
	err  error
	out  []byte
}

// sluiceBinary builds cmd/sluice as deploy/Dockerfile does, once for the
// tests of this package, and returns its path.
func sluiceBinary(t *testing.T) string {
	t.Helper()
	b := buildOfDockerfile(t, parseDockerfile(t))
	root := repoRoot(t)
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-image-")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "sluice")
		cmd := exec.Command("go", slices.Concat([]string{"build", "-o", built.path}, b.args)...)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), b.env...)
		built.out, built.err = cmd.CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build %v: %v\n%s", b.args, built.err, built.out)
	}
	return built.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.path != "" {
		os.RemoveAll(filepath.Dir(built.path))
	}
	os.Exit(code)
}

func TestDockerfile(t *testing.T) {
	stages := parseDockerfile(t)
	final := stages[len(stages)-1]
	if !strings.HasPrefix(final.base, "gcr.io/distroless/static") && final.base != "scratch" {
		t.Errorf("final stage FROM %s: want distroless static or scratch", final.base)
	}
	var user string
	var entrypoint []string
	for _, in := range final.body {
		switch in.cmd {
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			if err := json.Unmarshal([]byte(in.args), &entrypoint); err != nil {
				t.Fatalf("ENTRYPOINT %s: want the exec (JSON) form: %v", in.args, err)
			}
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	if uid == "" || uid == "0" || uid == "root" || !regexp.MustCompile(`^[0-9]+$`).MatchString(uid) {
		t.Errorf("USER %q: want a numeric non-root uid (runAsNonRoot can only verify a number)", user)
	}
	if len(entrypoint) == 0 || filepath.Base(entrypoint[0]) != "sluice" {
		t.Errorf("ENTRYPOINT %v: want the sluice binary", entrypoint)
	}

	// The builder is the go line of go.mod.
	mod, err := os.ReadFile(filepath.Join(repoRoot(t), "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := regexp.MustCompile(`(?m)^go ([0-9.]+)$`).FindSubmatch(mod)
	if goLine == nil {
		t.Fatal("go.mod has no go line")
	}
	builder := stages[0].base
	if want := "golang:" + string(goLine[1]); builder != want && !strings.HasPrefix(builder, want+"-") {
		t.Errorf("builder FROM %s: want %s (go.mod's go line)", builder, want)
	}

	b := buildOfDockerfile(t, stages)
	if !slices.Contains(b.env, "CGO_ENABLED=0") {
		t.Errorf("build ENV %v: want CGO_ENABLED=0", b.env)
	}
	if !slices.Contains(b.args, "-trimpath") {
		t.Errorf("go build %v: want -trimpath", b.args)
	}
	if b.args[len(b.args)-1] != "./cmd/sluice" {
		t.Errorf("go build %v: want ./cmd/sluice last (its default.pgo applies only to a main package built by path)", b.args)
	}
	if slices.ContainsFunc(b.args, func(a string) bool { return strings.HasPrefix(a, "-pgo=") && a != "-pgo=auto" }) {
		t.Errorf("go build %v: the committed default.pgo is used by -pgo=auto", b.args)
	}

	f, err := elf.Open(sluiceBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary has a %v program header: it is not static", p.Type)
		}
	}
	if f.Section(".dynamic") != nil || f.Section(".interp") != nil {
		t.Error("the binary has a .dynamic or .interp section: it is not static")
	}
}

// TestSluiceAcceptsTheConfigs runs `sluice check` of the image's binary on
// each container's config, in a directory laid out as the kubelet mounts
// the pod's volumes (ConfigMaps and Secrets as rendered, emptyDirs and
// claims empty), with the container's environment from those Secrets.
// check reads every file the config names (contracts, certificates and
// keys, the password file, the sink's CA) and opens no connection.
func TestSluiceAcceptsTheConfigs(t *testing.T) {
	d := renderExample(t)
	bin := sluiceBinary(t)
	for name, tmpl := range d.workloads() {
		spec := tmpl.Spec
		// Other commands (sink migrate) read a part of a file that one of
		// the pod's servers has: check takes that file whole.
		for _, c := range spec.InitContainers {
			raw, _ := podConfig(t, d, spec, c)
			if !slices.ContainsFunc(spec.Containers, func(s corev1.Container) bool {
				r, _ := podConfig(t, d, spec, s)
				return bytes.Equal(r, raw)
			}) {
				t.Errorf("%s: init container %s runs with a config no server of the pod has", name, c.Name)
			}
		}
		for _, c := range spec.Containers {
			t.Run(name+"/"+c.Name, func(t *testing.T) {
				root := t.TempDir()
				var mounts []string
				for _, m := range c.VolumeMounts {
					mounts = append(mounts, m.MountPath)
					dir := filepath.Join(root, m.MountPath)
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					files := map[string][]byte{}
					if v := podVolume(spec, m.Name); v != nil {
						switch {
						case v.ConfigMap != nil:
							cm := d.configMap(t, v.ConfigMap.Name)
							for k, s := range cm.Data {
								files[k] = []byte(s)
							}
							for k, b := range cm.BinaryData {
								files[k] = b
							}
						case v.Secret != nil:
							files = d.secret(t, v.Secret.SecretName).Data
						}
					}
					for k, b := range files {
						if err := os.WriteFile(filepath.Join(dir, k), b, 0o600); err != nil {
							t.Fatal(err)
						}
					}
				}
				raw, _ := podConfig(t, d, spec, c)
				// Every absolute path under a mount moves under root, in one
				// pass; the longest mount path is tried first.
				sort.Slice(mounts, func(i, j int) bool { return len(mounts[i]) > len(mounts[j]) })
				var pairs []string
				for _, m := range mounts {
					pairs = append(pairs, m+"/", filepath.Join(root, m)+"/")
				}
				for _, m := range mounts {
					pairs = append(pairs, m+"\n", filepath.Join(root, m)+"\n")
				}
				config := filepath.Join(t.TempDir(), "config.yaml")
				if err := os.WriteFile(config, []byte(strings.NewReplacer(pairs...).Replace(string(raw))), 0o600); err != nil {
					t.Fatal(err)
				}
				env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
				for _, e := range c.Env {
					switch {
					case e.ValueFrom == nil:
						env = append(env, e.Name+"="+e.Value)
					case e.ValueFrom.SecretKeyRef != nil:
						ref := e.ValueFrom.SecretKeyRef
						v, ok := d.secret(t, ref.Name).Data[ref.Key]
						if !ok {
							t.Fatalf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
						}
						env = append(env, e.Name+"="+string(v))
					default:
						t.Fatalf("env %s: a source this test does not follow", e.Name)
					}
				}
				role := c.Args[0]
				if role != "gateway" && role != "consumer" {
					t.Fatalf("container %s runs %v, not sluice gateway or consumer", c.Name, c.Args)
				}
				cmd := exec.Command(bin, "check", "--config", config, "--role", role)
				cmd.Env = env
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					t.Fatalf("sluice check --role %s: %v\n%s", role, err, out.String())
				}
				if !strings.Contains(out.String(), ": "+role+": ok") {
					t.Fatalf("sluice check --role %s: %s", role, out.String())
				}
				t.Log(strings.TrimSpace(out.String()))
			})
		}
	}
}

func podVolume(spec corev1.PodSpec, name string) *corev1.Volume {
	for i, v := range spec.Volumes {
		if v.Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}
