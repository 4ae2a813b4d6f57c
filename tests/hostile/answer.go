package hostile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/clip"
)

// errorDomain is the google.rpc.ErrorInfo domain of the gateway's typed
// refusals (gateway.ErrorDomain). It is part of the API, so a binary of
// another version is judged by the same one.
const errorDomain = "ingest.sluice"

// kind is what became of one request or stream.
type kind int

const (
	// kindTyped is an answer the caller can act on: a response, a gRPC status
	// with an ErrorInfo of errorDomain, or a REST status that is not a
	// 5xx (503 excepted) with a JSON body that names a reason.
	kindTyped kind = iota
	// kindUntyped is anything else: a transport error, a reset, a status
	// without ErrorInfo, a 5xx, a body without a reason, no answer within
	// the caller's deadline.
	kindUntyped
	// kindOpen is a stream the server had not ended when the client let go of
	// it: no answer yet, which is neither.
	kindOpen
)

func (k kind) String() string {
	switch k {
	case kindTyped:
		return "typed"
	case kindUntyped:
		return "untyped"
	case kindOpen:
		return "open"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// tally counts the answers of one load by kind and by what they said, and
// a few figures of the load besides (batches sent, largest answer). It is
// safe for concurrent use.
type tally struct {
	Name string

	mu      sync.Mutex
	answers map[kind]map[string]int
	sums    map[string]int64
	maxes   map[string]int64
}

// newTally returns an empty tally.
func newTally(name string) *tally {
	return &tally{Name: name, answers: map[kind]map[string]int{}, sums: map[string]int64{}, maxes: map[string]int64{}}
}

// answer counts one answer of the kind, under what it said.
func (t *tally) answer(k kind, what string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.answers[k] == nil {
		t.answers[k] = map[string]int{}
	}
	t.answers[k][what]++
}

// add adds n to the figure name.
func (t *tally) add(name string, n int64) {
	t.mu.Lock()
	t.sums[name] += n
	t.mu.Unlock()
}

// max raises the figure name to n.
func (t *tally) max(name string, n int64) {
	t.mu.Lock()
	t.maxes[name] = max(t.maxes[name], n)
	t.mu.Unlock()
}

// sum is the figure name's sum (add).
func (t *tally) sum(name string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sums[name]
}

// count is how many answers of the kind there were.
func (t *tally) count(k kind) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.answers[k] {
		n += c
	}
	return n
}

// total is how many answers there were, of every kind.
func (t *tally) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, byWhat := range t.answers {
		for _, c := range byWhat {
			n += c
		}
	}
	return n
}

// line is one row of a tally's table.
type line struct {
	Kind  kind
	What  string
	Count int
}

// lines are the tally's answers, by kind, most frequent first.
func (t *tally) lines() []line {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []line
	for _, k := range []kind{kindTyped, kindUntyped, kindOpen} {
		start := len(out)
		for what, n := range t.answers[k] {
			out = append(out, line{Kind: k, What: what, Count: n})
		}
		sort.Slice(out[start:], func(i, j int) bool {
			a, b := out[start+i], out[start+j]
			return a.Count > b.Count || a.Count == b.Count && a.What < b.What
		})
	}
	return out
}

// figures are the tally's sums and maxima, by name.
func (t *tally) figures() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for name, n := range t.sums {
		out = append(out, fmt.Sprintf("%s: %d", name, n))
	}
	for name, n := range t.maxes {
		out = append(out, fmt.Sprintf("%s: %d", name, n))
	}
	slices.Sort(out)
	return out
}

// grpcAnswer says what a unary call's outcome is: err nil is a response
// (resp summed up by its results), a status with an ErrorInfo of
// errorDomain is typed, anything else is not.
func grpcAnswer(resp *ingestv1.PublishResponse, err error) (kind, string) {
	if err == nil {
		return kindTyped, "response: " + resultsSummary(resp.GetResults())
	}
	return statusAnswer(err)
}

// streamEnd says how the server ended a stream, from the error RecvMsg
// gave after the last response. A stream ended OK (io.EOF) carries no
// reason the caller could act on, so it is untyped too.
func streamEnd(err error) (kind, string) {
	if errors.Is(err, io.EOF) {
		return kindUntyped, "ended OK, without a reason"
	}
	return statusAnswer(err)
}

func statusAnswer(err error) (kind, string) {
	st, ok := status.FromError(err)
	if !ok {
		return kindUntyped, "not a status: " + normalize(err.Error())
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			return kindTyped, st.Code().String() + " " + info.GetReason()
		}
	}
	if st.Code() == codes.OK {
		return kindUntyped, "OK status without a response"
	}
	return kindUntyped, st.Code().String() + " without ErrorInfo: " + normalize(st.Message())
}

// restAnswer says what a REST call's outcome is from the response and its
// body, or the error that took their place.
func restAnswer(resp *http.Response, body []byte, err error) (kind, string) {
	if err != nil {
		return kindUntyped, "transport: " + normalize(err.Error())
	}
	code := resp.StatusCode
	if code >= 500 && code != http.StatusServiceUnavailable {
		return kindUntyped, fmt.Sprintf("HTTP %d", code)
	}
	var b struct {
		Reason  string `json:"reason"`
		Results []struct {
			Outcome   string `json:"outcome"`
			Rejection struct {
				Reason string `json:"reason"`
			} `json:"rejection"`
		} `json:"results"`
	}
	if json.Unmarshal(body, &b) != nil {
		return kindUntyped, fmt.Sprintf("HTTP %d, body not JSON", code)
	}
	if b.Reason != "" {
		return kindTyped, fmt.Sprintf("HTTP %d %s", code, b.Reason)
	}
	if len(b.Results) == 0 {
		return kindUntyped, fmt.Sprintf("HTTP %d without a reason", code)
	}
	results := make([]*ingestv1.EventResult, len(b.Results))
	for i, r := range b.Results {
		outcome := ingestv1.Outcome(ingestv1.Outcome_value[r.Outcome])
		reason := ingestv1.Reason(ingestv1.Reason_value[r.Rejection.Reason])
		results[i] = &ingestv1.EventResult{Outcome: outcome, Rejection: &ingestv1.Rejection{Reason: reason}}
	}
	return kindTyped, fmt.Sprintf("HTTP %d results: %s", code, resultsSummary(results))
}

// resultsSummary names the outcomes of a batch, each once, with the
// rejections' reasons: "REJECTED/SCHEMA_VIOLATION", "ACCEPTED,DUPLICATE".
func resultsSummary(results []*ingestv1.EventResult) string {
	seen := map[string]bool{}
	for _, r := range results {
		s := r.GetOutcome().String()
		if r.GetOutcome() == ingestv1.Outcome_REJECTED {
			s += "/" + r.GetRejection().GetReason().String()
		}
		seen[s] = true
	}
	if len(seen) == 0 {
		return "no results"
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

var digits = regexp.MustCompile(`[0-9]+`)

// normalize makes messages that differ only in numbers (sizes, ports,
// stream ids) one line of a tally.
func normalize(msg string) string {
	return clip.String(digits.ReplaceAllString(msg, "N"), 103)
}
