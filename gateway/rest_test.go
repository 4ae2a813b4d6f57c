package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestRESTRequestFailures: bodies that are not a publish request are
// refused whole with their reason and, where one is known, the field.
// What is wrong inside one event refuses that event (TestHostileREST).
func TestRESTRequestFailures(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, c := range []struct {
		name   string
		body   string
		status int
		reason ingestv1.Reason
		field  string
	}{
		{"empty body", ``, 400, ingestv1.Reason_MALFORMED, ""},
		{"not JSON", `events=1`, 400, ingestv1.Reason_MALFORMED, ""},
		{"trailing data", `{"events":[]} {}`, 400, ingestv1.Reason_MALFORMED, ""},
		{"unknown member", `{"events":[],"evnts":[]}`, 400, ingestv1.Reason_MALFORMED, ""},
		{"invalid UTF-8", "{\"events\":[{\"id\":\"\xff\"}]}", 400, ingestv1.Reason_MALFORMED, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := h.postREST(keyAll, []byte(c.body))
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.status, body)
			}
			var eb ingestv1.ErrorBody
			if err := protojson.Unmarshal(body, &eb); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if eb.GetReason() != c.reason || eb.GetRetryable() || eb.GetMessage() == "" {
				t.Errorf("body %s", body)
			}
			if c.field != "" && (len(eb.GetViolations()) == 0 || eb.GetViolations()[0].GetField() != c.field) {
				t.Errorf("violations %v, want field %s", eb.GetViolations(), c.field)
			}
		})
	}

	t.Run("unknown route keeps its status", func(t *testing.T) {
		// Every /v1/ route is authenticated first: a caller without a key
		// learns nothing of the routes.
		for key, want := range map[string]int{keyAll: http.StatusNotFound, "": http.StatusUnauthorized} {
			req, _ := http.NewRequest(http.MethodGet, "http://"+h.srv.HTTPAddr()+"/v1/nothing", nil)
			if key != "" {
				req.Header.Set("X-Api-Key", key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("key %q: status %d, want %d", key, resp.StatusCode, want)
			}
		}
	})

	t.Run("bearer token", func(t *testing.T) {
		e := ev{ID: "bearer-1", Type: typeLog, Key: "svc", At: h.clock.Now(), JSON: examples.LogLineJSON}
		req, _ := http.NewRequest(http.MethodPost, "http://"+h.srv.HTTPAddr()+"/v1/events", bytes.NewReader(restBody(e)))
		req.Header.Set("Authorization", "Bearer "+keyAll)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		wantAccepted(t, mustResults(t, body), "bearer-1")
	})
}

// TestRESTOversizedBodyIsNotRead: a body whose Content-Length is over the
// limit is refused from the headers alone: the answer comes while the
// client has sent almost nothing of it.
func TestRESTOversizedBodyIsNotRead(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	conn, err := net.DialTimeout("tcp", h.srv.HTTPAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	const declared = 1 << 30
	fmt.Fprintf(conn, "POST /v1/events HTTP/1.1\r\nHost: x\r\nX-Api-Key: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"events\":[", keyAll, declared)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var eb ingestv1.ErrorBody
	if err := protojson.Unmarshal(body, &eb); err != nil || eb.GetReason() != ingestv1.Reason_BATCH_TOO_LARGE {
		t.Fatalf("body %s (%v)", body, err)
	}

	// Without a Content-Length (chunked), reading stops at the limit.
	pr, pw := io.Pipe()
	go func() {
		chunk := bytes.Repeat([]byte(" "), 8<<10)
		pw.Write([]byte(`{"events":[`))
		for range 64 { // 512 KiB of whitespace, far over the 64 KiB limit
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	req, _ := http.NewRequest(http.MethodPost, "http://"+h.srv.HTTPAddr()+"/v1/events", pr)
	req.Header.Set("X-Api-Key", keyAll)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	pr.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked: status %d: %s", resp.StatusCode, body)
	}
}
