package secret_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/logtest"
	"github.com/sluicehq/sluice/internal/secret"
)

const (
	first  = "first-secret-0123456789"
	second = "second-secret-9876543210"
)

// write puts content beside path and renames it over, as a Secret's
// mount swaps a file.
func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// asString takes the secret as it is; refuse, when set, refuses it.
func asString(refuse string) func([]byte) (string, error) {
	return func(b []byte) (string, error) {
		if refuse != "" && strings.Contains(string(b), refuse) {
			return "", errors.New("the parser refuses it")
		}
		return string(b), nil
	}
}

// clock is a clock the test moves.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	return c
}

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		write(t, p, content)
		return p
	}
	plain, lf, crlf, cr := file("plain", first), file("lf", first+"\n"), file("crlf", first+"\r\n"), file("cr", first+"\r")
	spaced := file("spaced", " "+first+" \n")
	twoLines := file("two-lines", first+"\n\n")
	empty, onlyNewline := file("empty", ""), file("only-newline", "\n")
	atBound := file("at-bound", strings.Repeat("s", 64)+"\r\n")
	overBound := file("over-bound", strings.Repeat("s", 65))
	refused := file("refused", first+"-refuse")
	env := map[string]string{"FIRST": first, "EMPTY": "", "NEWLINE": first + "\n", "LONG": strings.Repeat("s", 65), "REFUSED": "x-refuse"}
	getenv := func(k string) string { return env[k] }
	for _, c := range []struct {
		name    string
		src     secret.Source
		want    string
		wantErr string // a part of the error; "" when Load succeeds
	}{
		{"a file", secret.Source{File: plain}, first, ""},
		{"a file's newline is trimmed", secret.Source{File: lf}, first, ""},
		{"a file's CRLF is trimmed", secret.Source{File: crlf}, first, ""},
		{"a file's CR is trimmed", secret.Source{File: cr}, first, ""},
		{"spaces are kept", secret.Source{File: spaced}, " " + first + " ", ""},
		{"one line ending only", secret.Source{File: twoLines}, first + "\n", ""},
		{"a file at the bound", secret.Source{File: atBound}, strings.Repeat("s", 64), ""},
		{"a file over the bound", secret.Source{File: overBound}, "", "longer than 64 bytes"},
		{"an empty file", secret.Source{File: empty}, "", "empty"},
		{"a file of a newline", secret.Source{File: onlyNewline}, "", "empty"},
		{"a missing file", secret.Source{File: filepath.Join(dir, "missing")}, "", "no such file"},
		{"a directory", secret.Source{File: dir}, "", "not a regular file"},
		{"a file the parser refuses", secret.Source{File: refused}, "", refused + ": the parser refuses it"},
		{"an environment variable", secret.Source{Env: "FIRST"}, first, ""},
		{"an environment variable as it is", secret.Source{Env: "NEWLINE"}, first + "\n", ""},
		{"an empty environment variable", secret.Source{Env: "EMPTY"}, "", "environment variable EMPTY is empty or unset"},
		{"an unset environment variable", secret.Source{Env: "UNSET"}, "", "environment variable UNSET is empty or unset"},
		{"an environment variable over the bound", secret.Source{Env: "LONG"}, "", "environment variable LONG: the secret is longer than 64 bytes"},
		{"an environment variable the parser refuses", secret.Source{Env: "REFUSED"}, "", "environment variable REFUSED: the parser refuses it"},
		{"both", secret.Source{File: plain, Env: "FIRST"}, "", "not both"},
		{"neither", secret.Source{}, "", "names a file or an environment variable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := secret.Load("test: secret", c.src, asString("refuse"), secret.WithGetenv(getenv), secret.WithMaxBytes(64),
				secret.WithLogger(slog.New(slog.DiscardHandler)))
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatal(err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("%v, want an error with %q", err, c.wantErr)
			case c.wantErr == "" && l.Current() != c.want:
				t.Fatalf("%q, want %q", l.Current(), c.want)
			}
			if err != nil && (strings.Contains(err.Error(), first) || strings.Contains(err.Error(), "sss")) {
				t.Fatalf("the error holds the secret: %v", err)
			}
		})
	}
}

// TestFIFOIsRefusedUnread: a FIFO at the path is refused before it is
// opened, so Load does not wait for a writer.
func TestFIFOIsRefusedUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	if err := mkfifo(path); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := secret.Load("test: secret", secret.Source{File: path}, asString("")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("%v, want not a regular file", err)
	}
}

// TestFileReloads: a file renamed over is read again once the interval
// has passed; a file the parser refuses, or one that is gone, keeps the
// secret before and is logged once; a file back in place is read again.
// No log line holds a secret.
func TestFileReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	write(t, path, first+"\n")
	clk := newClock()
	logs := &logtest.Buffer{}
	l, err := secret.Load("test: secret", secret.Source{File: path}, asString("refuse"), secret.WithClock(clk.now),
		secret.WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	step := func(what, content string, want string, log string) {
		t.Helper()
		if content != "" {
			write(t, path, content)
		}
		if got := l.Current(); got != first && got != second {
			t.Fatalf("%s: %q before the interval", what, got)
		}
		clk.advance(time.Second)
		before := strings.Count(logs.String(), "\n")
		if got := l.Current(); got != want {
			t.Fatalf("%s: %q, want %q", what, got, want)
		}
		lines := strings.Split(logs.String(), "\n")[before:]
		if log == "" && strings.Join(lines, "") != "" {
			t.Fatalf("%s: logged %q", what, lines)
		}
		if log != "" && !strings.Contains(strings.Join(lines, "\n"), log) {
			t.Fatalf("%s: logged %q, want %q", what, lines, log)
		}
	}
	if got := l.Current(); got != first {
		t.Fatalf("%q, want %q", got, first)
	}
	write(t, path, second+"\n")
	if got := l.Current(); got != first {
		t.Fatalf("read again before the interval: %q", got)
	}
	step("renamed over", "", second, "test: secret reloaded")
	step("the same bytes again", second+"\n", second, "")
	step("unchanged", "", second, "")
	step("refused by the parser", "x-refuse", second, "test: secret file reload failed")
	step("refused, unchanged", "", second, "")
	step("empty", "\n", second, "test: secret file reload failed")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	step("gone", "", second, "test: secret file unreadable")
	step("still gone", "", second, "")
	step("back", first, first, "test: secret reloaded")
	if strings.Contains(logs.String(), first) || strings.Contains(logs.String(), second) {
		t.Fatalf("a secret is in the log:\n%s", logs.String())
	}
}

// TestEnvironmentIsReadOnce: a variable changed after Load is not read.
func TestEnvironmentIsReadOnce(t *testing.T) {
	var v atomic.Value
	v.Store(first)
	clk := newClock()
	l, err := secret.Load("test: secret", secret.Source{Env: "X"}, asString(""), secret.WithClock(clk.now),
		secret.WithGetenv(func(string) string { return v.Load().(string) }))
	if err != nil {
		t.Fatal(err)
	}
	v.Store(second)
	clk.advance(time.Hour)
	if got := l.Current(); got != first {
		t.Fatalf("%q, want %q", got, first)
	}
}

// TestConcurrentCurrent: callers at once while the file rotates each get
// a whole secret, one of those written (run under -race in CI).
func TestConcurrentCurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	write(t, path, "v0")
	clk := newClock()
	l, err := secret.Load("test: secret", secret.Source{File: path}, asString(""), secret.WithClock(clk.now),
		secret.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	const versions = 50
	written := map[string]bool{"v0": true}
	for i := 1; i <= versions; i++ {
		written[fmt.Sprintf("v%d", i)] = true
	}
	var wg sync.WaitGroup
	var bad atomic.Value
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if got := l.Current(); !written[got] {
					bad.Store(got)
				}
			}
		}()
	}
	for i := 1; i <= versions; i++ {
		write(t, path, fmt.Sprintf("v%d", i))
		clk.advance(time.Second)
		l.Current()
	}
	close(stop)
	wg.Wait()
	if b := bad.Load(); b != nil {
		t.Fatalf("a caller got %q", b)
	}
	if got := l.Current(); got != fmt.Sprintf("v%d", versions) {
		t.Fatalf("%q after the last rotation", got)
	}
}
