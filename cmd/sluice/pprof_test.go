package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

// TestServePprof: --pprof serves the profiles on loopback only, and its
// server stops when asked.
func TestServePprof(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	for _, addr := range []string{"0.0.0.0:0", "10.1.2.3:6060", "example.com:6060", "nonsense"} {
		if _, err := servePprof(addr, quiet); err == nil {
			t.Errorf("%s: want refused", addr)
		}
	}
	var got string
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	stop, err := servePprof("127.0.0.1:0", slog.New(captureAddr{Handler: log.Handler(), addr: &got}))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + got + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("heap profile: status %d", resp.StatusCode)
	}
}

// captureAddr keeps the "addr" attribute of the records it handles.
type captureAddr struct {
	slog.Handler
	addr *string
}

func (c captureAddr) Handle(ctx context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "addr" {
			*c.addr = a.Value.String()
		}
		return true
	})
	return c.Handler.Handle(ctx, r)
}
