package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/record"
)

func serve(t *testing.T, tr *Tracer) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	tr.Routes(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, srv *httptest.Server, path string) (int, http.Header, []byte) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// The endpoint answers the Answer's JSON, the same bytes as WriteJSON
// of the same lookup: 200 when found, 404 for UNKNOWN.
func TestEndpointAnswers(t *testing.T) {
	f := newFixture(t, 1)
	dl := row(audit.DeadLettered, 1, failedAt, Position{topic, 0, 3})
	dl.Class, dl.Retryable = "transient", true
	odd := dl
	odd.Source, odd.EventID = "shop/eu", "o/1 2"
	tr := f.tracer(WithAuditReader(&rowsReader{rows: []audit.Row{dl, odd}}))
	srv := serve(t, tr)

	code, h, body := get(t, srv, "/v1/trace/test/e1")
	if code != http.StatusOK || h.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s: %s", code, h.Get("Content-Type"), body)
	}
	var want bytes.Buffer
	if err := trace(t, tr, Query{Source: source, ID: "e1"}).WriteJSON(&want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(body, want.Bytes()) {
		t.Errorf("endpoint:\n%s\nWriteJSON:\n%s", body, want.Bytes())
	}
	var a Answer
	if err := json.Unmarshal(body, &a); err != nil || a.Status != InDLQ || a.DeadLetter.Next == nil {
		t.Fatalf("%v: %s", err, body)
	}

	// A source and an id holding "/" and " " are escaped path segments.
	code, _, body = get(t, srv, "/v1/trace/"+url.PathEscape("shop/eu")+"/"+url.PathEscape("o/1 2"))
	if err := json.Unmarshal(body, &a); code != http.StatusOK || err != nil || a.Source != "shop/eu" || a.ID != "o/1 2" {
		t.Fatalf("%d %v: %s", code, err, body)
	}

	code, _, body = get(t, srv, "/v1/trace/test/nobody?max_records=5&timeout=10s")
	if err := json.Unmarshal(body, &a); code != http.StatusNotFound || err != nil || a.Status != Unknown || a.Limits.MaxRecords != 5 {
		t.Fatalf("%d %v: %s", code, err, body)
	}

	// A hint is read alone.
	f.produce(event(t, "p1", 0))
	code, _, body = get(t, srv, "/v1/trace/test/p1?topic="+topic+"&partition=0&offset=0")
	if err := json.Unmarshal(body, &a); code != http.StatusOK || err != nil || a.Status != Pending || searched(&a, SearchHint) == nil {
		t.Fatalf("%d %v: %s", code, err, body)
	}
}

// Bad input is 400 with a typed JSON error naming the field, never a
// 5xx.
func TestEndpointRefusesBadInput(t *testing.T) {
	f := newFixture(t, 1)
	srv := serve(t, f.tracer())
	for _, c := range []struct{ path, field string }{
		{"/v1/trace/test/" + strings.Repeat("x", 600), "id"},
		{"/v1/trace/te%00st/e1", "source"},
		{"/v1/trace/test/%FF", "id"},
		{"/v1/trace/test/e1?partition=0&offset=1", "topic"},
		{"/v1/trace/test/e1?topic=" + topic + "&partition=x&offset=1", "partition"},
		{"/v1/trace/test/e1?topic=" + topic + "&partition=0&offset=-1", "offset"},
		{"/v1/trace/test/e1?topic=" + topic + "&partition=99999999999&offset=1", "partition"},
		{"/v1/trace/test/e1?topic=" + record.DLQTopic(topic) + "&partition=0&offset=1", "topic"},
		{"/v1/trace/test/e1?max_records=0", "max_records"},
		{"/v1/trace/test/e1?max_records=100001", "max_records"},
		{"/v1/trace/test/e1?timeout=1h", "timeout"},
		{"/v1/trace/test/e1?timeout=soon", "timeout"},
		{"/v1/trace/test/e1?verbose=1", "verbose"},
		{"/v1/trace/test/e1?max_records=1&max_records=2", "max_records"},
		{"/v1/trace/test/e1?a=%zz", "query"},
		{"/v1/trace/test", "path"},
		{"/v1/trace/test/e1/more", "path"},
		{"/v1/trace/", "path"},
	} {
		code, h, body := get(t, srv, c.path)
		var e ErrorBody
		if err := json.Unmarshal(body, &e); code != http.StatusBadRequest || err != nil || h.Get("Content-Type") != "application/json" ||
			e.Error.Reason != ReasonInvalidArgument || e.Error.Field != c.field || e.Error.Retryable {
			t.Errorf("%s: %d %v: %s", c.path, code, err, body)
		}
	}
}

// Past WithMaxConcurrent lookups in flight, a request is refused BUSY,
// retryable, with Retry-After; once they end, it is served.
func TestEndpointBusy(t *testing.T) {
	f := newFixture(t, 1)
	f.produce(deadLetter(t, dlqTopic, "e1", record.Envelope{Class: "permanent"}))
	release := make(chan struct{})
	held := make(chan struct{}, 1)
	f.cluster.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case <-release:
			f.cluster.DropControl()
			return nil, nil, false
		default:
		}
		f.cluster.KeepControl()
		select {
		case held <- struct{}{}:
		default:
		}
		f.cluster.SleepControl(func() { <-release })
		return nil, nil, false
	})
	srv := serve(t, f.tracer(WithMaxConcurrent(1)))
	first := make(chan int, 1)
	go func() {
		resp, err := srv.Client().Get(srv.URL + "/v1/trace/test/e1")
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-held // the first lookup is fetching
	code, h, body := get(t, srv, "/v1/trace/test/e1")
	var e ErrorBody
	if err := json.Unmarshal(body, &e); code != http.StatusServiceUnavailable || err != nil || e.Error.Reason != ReasonBusy ||
		!e.Error.Retryable || h.Get("Retry-After") != "1" {
		t.Errorf("%d %v: %s", code, err, body)
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("the first lookup: %d", code)
	}
	waitfor.Condition(t, 10*time.Second, "a lookup served after the first ended", func() bool {
		code, _, _ := get(t, srv, "/v1/trace/test/e1")
		return code == http.StatusOK
	})
}

// Kafka that does not answer is 503 UNAVAILABLE, retryable, within the
// request's time bound.
func TestEndpointUnavailable(t *testing.T) {
	f := newFixture(t, 1)
	srv := serve(t, f.tracer(WithLimits(Limits{Timeout: 2 * time.Second}), WithLogger(slog.New(slog.DiscardHandler))))
	f.cluster.Close()
	code, _, body := get(t, srv, "/v1/trace/test/e1")
	var e ErrorBody
	if err := json.Unmarshal(body, &e); code != http.StatusServiceUnavailable || err != nil || e.Error.Reason != ReasonUnavailable || !e.Error.Retryable {
		t.Errorf("%d %v: %s", code, err, body)
	}
}

// ParseRequest never panics, and refuses only with a *QueryError naming a
// field; what it accepts is a valid query within the ceiling.
func FuzzParseRequest(f *testing.F) {
	for _, s := range [][3]string{
		{"test", "e1", ""},
		{"shop/eu", "o/1 2", "topic=" + topic + "&partition=0&offset=3"},
		{"test", "e1", "max_records=10&timeout=1s"},
		{"", "e1", "partition=1"},
		{"t\x00", "\xff", "a=%zz&topic=x"},
		{"test", "e1", "partition=-1&offset=9223372036854775808&topic=" + topic},
		{"test", "e1", "timeout=-1s&max_records=1e3"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	ceiling := Limits{MaxRecords: 1000, Timeout: time.Minute}
	sources := []string{topic}
	f.Fuzz(func(t *testing.T, src, id, rawQuery string) {
		q, err := ParseRequest(src, id, rawQuery, ceiling, sources)
		if err != nil {
			var qe *QueryError
			if !errors.As(err, &qe) || qe.Field == "" {
				t.Fatalf("error %v is not a QueryError naming a field", err)
			}
			return
		}
		if err := q.Validate(sources); err != nil {
			t.Fatalf("accepted %+v that Validate refuses: %v", q, err)
		}
		if q.Source != src || q.ID != id || q.Limits.MaxRecords > ceiling.MaxRecords || q.Limits.Timeout > ceiling.Timeout {
			t.Fatalf("accepted %+v from %q %q %q", q, src, id, rawQuery)
		}
	})
}
