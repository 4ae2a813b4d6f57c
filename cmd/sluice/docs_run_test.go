package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docsRunMarker marks a docs page whose commands TestDocsRun runs.
const docsRunMarker = "<!-- sluice-docs: run against sluice dev -->"

// docsBlock is one fenced code block of a page.
type docsBlock struct {
	line    int    // of the opening fence
	lang    string // the info string's first word
	text    string
	follows bool // opens on the line after the previous block closed (blank lines aside)
}

// docsBlocks reads a page's fenced code blocks in order.
func docsBlocks(page string) []docsBlock {
	var blocks []docsBlock
	var cur *docsBlock
	var body []string
	fence := ""
	closedAt := -10 // line of the last closing fence
	onlyBlank := false
	sc := bufio.NewScanner(strings.NewReader(page))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if cur == nil {
			if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
				fence = trimmed[:3]
				for len(fence) < len(trimmed) && trimmed[len(fence)] == fence[0] {
					fence += fence[:1]
				}
				lang, _, _ := strings.Cut(strings.TrimSpace(trimmed[len(fence):]), " ")
				cur = &docsBlock{line: n, lang: lang, follows: closedAt == n-1 || (closedAt > 0 && onlyBlank)}
				body = nil
				continue
			}
			if strings.TrimSpace(line) != "" {
				onlyBlank = false
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.TrimSpace(strings.TrimLeft(trimmed, fence[:1])) == "" {
			cur.text = strings.Join(body, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur, closedAt, onlyBlank = nil, n, true
			continue
		}
		body = append(body, line)
	}
	return blocks
}

var (
	docsTime      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:\d\d)`)
	docsPartition = regexp.MustCompile(`"partition":\d+`)
	docsOffset    = regexp.MustCompile(`"offset":"\d+"`)
	docsPosition  = regexp.MustCompile(`\[\d+\]@\d+|/\d+@\d+`)
	docsDuration  = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:ns|µs|us|ms|s|m|h)\b`)
	docsSpaces    = regexp.MustCompile(`[ \t]{2,}`)
	docsCutJSON   = regexp.MustCompile(`\{"[^\n]*…`)
	docsHole      = regexp.MustCompile(`<[A-Za-z0-9_. -]{1,40}>`)
)

// docsNormalise makes output comparable across runs: RFC 3339 times,
// Kafka partitions and offsets and durations become placeholders, a JSON
// payload cut short with "…" (sluice sink recent's last column, whose
// protojson spacing varies from build to build) becomes {…}, runs of
// spaces (table padding) one space, and trailing blanks go.
// docsJSONSpace is the space protojson may put after a JSON comma or
// colon (before a string, number, object or array).
var docsJSONSpace = regexp.MustCompile(`([,:]) (["{\[0-9-])`)

func docsNormalise(s string) string {
	s = docsTime.ReplaceAllString(s, "<time>")
	s = docsPartition.ReplaceAllString(s, `"partition":<n>`)
	s = docsOffset.ReplaceAllString(s, `"offset":"<n>"`)
	s = docsPosition.ReplaceAllStringFunc(s, func(m string) string {
		if m[0] == '[' {
			return "[<n>]@<n>"
		}
		return "/<n>@<n>"
	})
	s = docsDuration.ReplaceAllString(s, "<duration>")
	s = docsCutJSON.ReplaceAllString(s, "{…}")
	// protojson writes a space after a comma or colon in some builds and
	// not in others, on purpose: its output is not a stable format.
	s = docsJSONSpace.ReplaceAllString(s, "${1}${2}")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(docsSpaces.ReplaceAllString(l, " "), " \t\r")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n")
}

// docsMatch says whether got (a command's output) is what want (the
// page's text block) shows, both normalised; a <...> in want stands for
// any text within a line.
func docsMatch(want, got string) bool {
	want, got = docsNormalise(want), docsNormalise(got)
	var re strings.Builder
	re.WriteString(`^`)
	last := 0
	for _, loc := range docsHole.FindAllStringIndex(want, -1) {
		re.WriteString(regexp.QuoteMeta(want[last:loc[0]]))
		re.WriteString(`[^\n]+?`)
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(want[last:]))
	re.WriteString(`$`)
	return regexp.MustCompile(re.String()).MatchString(got)
}

// docsDevStart is the line of a block that starts sluice dev.
var docsDevStart = regexp.MustCompile(`(?m)^\s*(?:go run \./cmd/sluice|sluice) dev(?:\s+([^#\n]*))?`)

// TestDocsRun runs every docs page marked docsRunMarker as a reader would:
// the sluice built from this tree on PATH, one fresh `sluice dev` per page
// on free ports (started with the flags of the page's `sluice dev` block),
// each ```sh block in order in bash from the repository's root, and the
// output of each one directly followed by a ```text block compared with
// it (docsMatch). 127.0.0.1:8080, :9090, :9100, :9092 and /tmp/ are
// rewritten to the run's ports and temporary directory in commands and in
// the text. A block whose first line is "# not run: <reason>" is skipped.
func TestDocsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sluice and runs sluice dev per page; skipped with -short as the crash tests are")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var marked []string
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(docsRunMarker) + `$`).Match(b) {
			marked = append(marked, p)
		}
	}
	if len(marked) == 0 {
		t.Fatalf("no page under docs/ carries %s; docs/getting-started.md should", docsRunMarker)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "sluice"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, page := range marked {
		t.Run(filepath.Base(page), func(t *testing.T) {
			t.Parallel() // each page has a sluice dev, ports and files of its own
			runDocsPage(t, root, bin, page)
		})
	}
}

func runDocsPage(t *testing.T, root, bin, page string) {
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	httpAddr, grpcAddr, adminAddr, kafkaAddr := freePort(t), freePort(t), freePort(t), freePort(t)
	_, kafkaPort, _ := strings.Cut(kafkaAddr, ":")
	rewrite := strings.NewReplacer(
		"127.0.0.1:8080", httpAddr, "127.0.0.1:9090", grpcAddr, "127.0.0.1:9100", adminAddr,
		"127.0.0.1:9092", kafkaAddr, "--kafka-port 9092", "--kafka-port "+kafkaPort,
		"/tmp/", tmp+"/").Replace
	env := append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	rel, _ := filepath.Rel(root, page)

	blocks := docsBlocks(string(src))
	started := false
	for i, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		where := fmt.Sprintf("%s:%d", rel, b.line)
		if strings.HasPrefix(b.text, "# not run:") {
			t.Logf("%s: skipped (%s)", where, strings.TrimSpace(strings.SplitN(b.text, "\n", 2)[0]))
			continue
		}
		script := rewrite(b.text)
		if m := docsDevStart.FindStringSubmatch(script); m != nil {
			if started {
				t.Fatalf("%s: a second sluice dev", where)
			}
			startDocsDev(t, bin, tmp, strings.Fields(m[1]), httpAddr, grpcAddr, adminAddr, kafkaPort)
			started = true
			continue
		}
		if started {
			waitDocsSettled(adminAddr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, "bash", "-eo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = root, env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", where, err, script, out)
		}
		if i+1 < len(blocks) && blocks[i+1].follows && blocks[i+1].lang == "text" {
			want := rewrite(blocks[i+1].text)
			if !docsMatch(want, string(out)) {
				t.Errorf("%s: the output differs from the page's (line %d), normalised:\n--- page\n%s\n--- got\n%s",
					where, blocks[i+1].line, docsNormalise(want), docsNormalise(string(out)))
			}
		}
	}
	if !started {
		t.Errorf("%s: no sluice dev block", rel)
	}
}

// startDocsDev starts sluice dev with the page's flags and the run's
// ports, spool and (unless the page names one) sink, and stops it when
// the test ends.
func startDocsDev(t *testing.T, bin, tmp string, flags []string, httpAddr, grpcAddr, adminAddr, kafkaPort string) {
	t.Helper()
	args := append([]string{"dev"}, flags...)
	args = append(args, "--http", httpAddr, "--grpc", grpcAddr, "--admin", adminAddr,
		"--kafka-port", kafkaPort, "--spool-dir", filepath.Join(tmp, "spool"))
	if !strings.Contains(strings.Join(flags, " "), "sink-db") {
		args = append(args, "--sink-db", filepath.Join(tmp, "sink.db"))
	}
	out := newSyncBuffer()
	cmd := exec.Command(filepath.Join(bin, "sluice"), args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("sluice %s:\n%s", strings.Join(args, " "), out.String())
		}
	})
	waitFor(t, out, regexp.MustCompile(`gateway ready`))
	waitFor(t, out, regexp.MustCompile(`sluice dev is running`))
}

// waitDocsSettled waits, for a few seconds at most, until the dev's
// consumer tier has settled every event its gateway accepted, as it has
// by the time a reader types the next command.
func waitDocsSettled(admin string) {
	sum := func(text, metric string, only string) float64 {
		var n float64
		for _, l := range strings.Split(text, "\n") {
			if !strings.HasPrefix(l, metric+"{") || (only != "" && !strings.Contains(l, only)) {
				continue
			}
			if v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64); err == nil {
				n += v
			}
		}
		return n
	}
	waitUntil(10*time.Second, func() bool {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			b.WriteString(sc.Text())
			b.WriteByte('\n')
		}
		text := b.String()
		return sum(text, "sluice_consumer_events_total", "") >= sum(text, "sluice_events_total", `outcome="ACCEPTED"`)
	})
}
