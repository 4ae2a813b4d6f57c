package main

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is an io.Writer the test can read while sluice writes.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	written chan struct{} // signalled after each write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{written: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.written <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the output matches re, or fails at the deadline.
func waitFor(t *testing.T, out *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
		select {
		case <-out.written:
		case <-deadline:
			t.Fatalf("output never matched %s:\n%s", re, out.String())
		}
	}
}

// TestDev runs `sluice dev` on free ports, publishes the README's example
// event with the demo key, and sees it land in the in-process Kafka and
// then in the SQLite sink, beside the orders the demo poller pulls.
func TestDev(t *testing.T) {
	addr, out := startDev(t, "-tail=true", "-demo-partner=true")
	metrics := waitFor(t, out, regexp.MustCompile(`Metrics: (http://\S+)`))[1]
	if resp, err := http.Get(metrics); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the banner's metrics %s: %v %v", metrics, resp, err)
	} else {
		resp.Body.Close()
	}
	now := time.Now().UTC().Format(time.RFC3339)
	body := `{"events":[{"id":"log-1","type":"examples.logs.v1.LogLine","occurred_at":"` + now +
		`","partition_key":"checkout-api","payload":{"service":"checkout-api","severity":"SEVERITY_INFO","message":"hello","timestamp":"` + now + `","host":"127.0.0.1"}}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/events", strings.NewReader(body))
	req.Header.Set("X-Api-Key", DemoAPIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The first record of its topic, at offset 0 of the partition its key
	// hashes to, where the tail finds it.
	m := regexp.MustCompile(`^\{"results":\[\{"index":0,"id":"log-1","outcome":"ACCEPTED","durability":"KAFKA",` +
		`"kafka":\{"topic":"ingest\.examples\.logs\.v1\.LogLine","partition":(\d+),"offset":"0"\}\}\]\}$`).FindSubmatch(got)
	if m == nil {
		t.Fatalf("answer %s: want log-1 ACCEPTED in Kafka at offset 0 of ingest.examples.logs.v1.LogLine", got)
	}
	waitFor(t, out, regexp.MustCompile(`kafka: ingest\.examples\.logs\.v1\.LogLine\[`+string(m[1])+`\]@0 key=checkout-api id=log-1 source=demo`))
	// The consumer tier writes it to the SQLite sink.
	waitFor(t, out, regexp.MustCompile(`sink: sqlite \S+ id=log-1 type=examples\.logs\.v1\.LogLine source=demo`))
	// The demo partner's orders are pulled, admitted and land too.
	waitFor(t, out, regexp.MustCompile(`sink: sqlite \S+ id=\S+ type=examples\.shop\.v1\.OrderPlaced source=demo-shop`))
}
