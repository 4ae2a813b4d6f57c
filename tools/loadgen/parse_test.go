package loadgen

import (
	"errors"
	"strings"
	"testing"
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// TestParseRESTAnswer covers the gateway's answer shapes (docs/api.md's
// status table) and bodies that are not answers.
func TestParseRESTAnswer(t *testing.T) {
	results2 := `{"results":[{"index":1,"id":"b","outcome":"REJECTED","rejection":{"reason":"SCHEMA_VIOLATION","retryable":false,"message":"m"}},{"index":0,"id":"a","outcome":"ACCEPTED","durability":"KAFKA","kafka":{"topic":"ingest.t","partition":2,"offset":"12"}}]}`
	for _, tc := range []struct {
		name       string
		code       int
		retryAfter string
		body       string
		n          int
		check      func(Answer) bool
		err        bool
	}{
		{name: "207 results by index", code: 207, body: results2, n: 2, check: func(a Answer) bool {
			k := a.Results[0].Kafka
			return a.Results[0].ID == "a" && a.Results[0].Outcome == ingestv1.Outcome_ACCEPTED &&
				k.GetTopic() == "ingest.t" && k.GetPartition() == 2 && k.GetOffset() == 12 && a.Results[0].Spool == nil &&
				a.Results[1].Reason == "SCHEMA_VIOLATION" && a.Results[1].Kafka == nil
		}},
		{name: "503 results with waits", code: 503, retryAfter: "2", n: 1,
			body: `{"results":[{"index":0,"id":"a","outcome":"REJECTED","rejection":{"reason":"BUFFER_FULL","retryable":true,"retry_after":"1.500s"}}]}`,
			check: func(a Answer) bool {
				r := a.Results[0]
				return r.Reason == "BUFFER_FULL" && r.Retryable && r.RetryAfter == 1500*time.Millisecond
			}},
		{name: "429 rate limited", code: 429, retryAfter: "3", n: 5,
			body: `{"reason":"RATE_LIMITED","retryable":true,"retry_after":"2.100s","violations":[],"message":"slow down"}`,
			check: func(a Answer) bool {
				f := a.Failure
				return f != nil && f.Code == "http:429" && f.Reason == "RATE_LIMITED" && f.Retryable && f.RetryAfter == 2100*time.Millisecond
			}},
		{name: "401 without wait", code: 401, n: 1, body: `{"reason":"UNAUTHENTICATED","retryable":false,"message":"no key"}`,
			check: func(a Answer) bool { return a.Failure.Reason == "UNAUTHENTICATED" && a.Failure.RetryAfter == 0 }},
		{name: "503 header wait only", code: 503, retryAfter: "4", n: 1, body: `{"reason":"UNAVAILABLE","retryable":true}`,
			check: func(a Answer) bool { return a.Failure.RetryAfter == 4*time.Second }},
		{name: "empty 200 (baseline)", code: 200, n: 3, body: "",
			check: func(a Answer) bool { return len(a.Results) == 3 && a.Results[2].Acknowledged() }},
		{name: "empty 502", code: 502, n: 3, body: " ",
			check: func(a Answer) bool { return a.Failure != nil && a.Failure.Code == "http:502" }},
		{name: "too few results", code: 200, n: 3, body: results2, err: true},
		{name: "index twice", code: 200, n: 2, body: `{"results":[{"index":0,"outcome":"ACCEPTED"},{"index":0,"outcome":"ACCEPTED"}]}`, err: true},
		{name: "index out of range", code: 200, n: 1, body: `{"results":[{"index":7,"outcome":"ACCEPTED"}]}`, err: true},
		{name: "html", code: 502, n: 1, body: "<html>bad gateway</html>", err: true},
		{name: "results not a list", code: 200, n: 1, body: `{"results":7}`, err: true},
	} {
		a, err := ParseRESTAnswer(tc.code, tc.retryAfter, []byte(tc.body), tc.n)
		if tc.err {
			var ae *AnswerError
			if !errors.As(err, &ae) {
				t.Errorf("%s: want an AnswerError, got %v (%+v)", tc.name, err, a)
			}
			continue
		}
		if err != nil || !tc.check(a) {
			t.Errorf("%s: %+v, %v", tc.name, a, err)
		}
	}
}

func FuzzParseRESTAnswer(f *testing.F) {
	f.Add(207, "", []byte(`{"results":[{"index":0,"id":"a","outcome":"ACCEPTED"}]}`), uint8(1))
	f.Add(429, "3", []byte(`{"reason":"RATE_LIMITED","retryable":true,"retry_after":"2s"}`), uint8(2))
	f.Add(200, "Wed, 21 Oct 2015 07:28:00 GMT", []byte(""), uint8(0))
	f.Fuzz(func(t *testing.T, code int, retryAfter string, body []byte, n uint8) {
		a, err := ParseRESTAnswer(code, retryAfter, body, int(n))
		if err != nil {
			var ae *AnswerError
			if !errors.As(err, &ae) {
				t.Fatalf("error is not an AnswerError: %v", err)
			}
			return
		}
		if a.Failure != nil && a.Results != nil {
			t.Fatalf("answer has both results and a failure: %+v", a)
		}
		if a.Failure == nil && len(a.Results) != int(n) {
			t.Fatalf("%d results for %d events", len(a.Results), n)
		}
		if a.Failure != nil && (a.Failure.RetryAfter < 0 || !strings.HasPrefix(a.Failure.Code, "http:")) {
			t.Fatalf("failure %+v", a.Failure)
		}
	})
}
