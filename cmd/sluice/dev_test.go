package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/consumer/trace"
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
	got := postLogLine(t, addr, "log-1")
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

// `sluice dev` runs the consumer tier as `sluice consumer` does: its
// admin listener serves the consumer's metrics beside the gateway's, and
// GET /v1/trace finds an event the consumer wrote to the sink.
func TestDevServesConsumerMetricsAndTrace(t *testing.T) {
	addr, out := startDev(t, "-tail=true", "-demo-partner=false")
	metrics := waitFor(t, out, regexp.MustCompile(`Metrics: http://(\S+)/metrics`))[1]
	waitFor(t, out, regexp.MustCompile(`Where an event is .*: +curl -s http://`+regexp.QuoteMeta(metrics)+`/v1/trace/demo/log-1\n`))
	got := postLogLine(t, addr, "traced-1")
	if !strings.Contains(string(got), `"outcome":"ACCEPTED"`) {
		t.Fatalf("answer %s: want traced-1 ACCEPTED", got)
	}
	waitFor(t, out, regexp.MustCompile(`sink: sqlite \S+ id=traced-1 type=examples\.logs\.v1\.LogLine source=demo`))

	// The consumer counts the write once the sink has taken it, and the
	// trace reads the sink's audit table: both are waited for.
	var code int
	var text string
	written := func() bool {
		code, text = adminGet(t, metrics, "/metrics")
		return code == http.StatusOK && strings.Contains(text, `sluice_consumer_events_total{outcome="written"} 1`)
	}
	if !waitUntil(20*time.Second, written) {
		t.Fatalf("GET /metrics: %d, never counted traced-1 written\n%s", code, text)
	}
	for _, want := range []string{
		"sluice_consumer_in_flight ", // the consumer's
		"sluice_admission_mode ",     // the gateway's, on the same listener
	} {
		if !strings.Contains(text, want) {
			t.Errorf("GET /metrics lacks %s", want)
		}
	}
	var a trace.Answer
	inSink := func() bool {
		code, text = adminGet(t, metrics, "/v1/trace/demo/traced-1")
		return code == http.StatusOK && json.Unmarshal([]byte(text), &a) == nil && a.Status == trace.InSink
	}
	if !waitUntil(20*time.Second, inSink) {
		t.Errorf("GET /v1/trace/demo/traced-1: %d, want 200 IN_SINK\n%s", code, text)
	}
	code, text = adminGet(t, metrics, "/v1/trace/demo/nobody")
	if err := json.Unmarshal([]byte(text), &a); code != http.StatusNotFound || err != nil || a.Status != trace.Unknown {
		t.Errorf("GET /v1/trace/demo/nobody: %d %v\n%s", code, err, text)
	}
}

// postLogLine publishes the README's LogLine, with id, to the dev's REST
// listener under the demo key, and returns the answer's body.
func postLogLine(t *testing.T, addr, id string) []byte {
	t.Helper()
	return postLogLineAs(t, addr, DemoAPIKey, id)
}

// postLogLineAs is postLogLine under the API key key.
func postLogLineAs(t *testing.T, addr, key, id string) []byte {
	t.Helper()
	now := time.Now().UTC().Format(time.RFC3339)
	body := `{"events":[{"id":"` + id + `","type":"examples.logs.v1.LogLine","occurred_at":"` + now +
		`","partition_key":"checkout-api","payload":{"service":"checkout-api","severity":"SEVERITY_INFO","message":"hello","timestamp":"` + now + `","host":"127.0.0.1"}}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/events", strings.NewReader(body))
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return got
}
