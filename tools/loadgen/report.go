package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Report is the outcome of a run. Durations are nanoseconds in JSON.
type Report struct {
	RunID            string        `json:"run_id"`
	Target           string        `json:"target"`
	Addr             string        `json:"addr"`
	EventType        string        `json:"event_type"`
	Encoding         string        `json:"encoding"`
	EventsPerRequest int           `json:"events_per_request"`
	PayloadBytes     int           `json:"payload_bytes"`
	Mode             string        `json:"mode"` // closed or open
	Concurrency      int           `json:"concurrency"`
	Rate             float64       `json:"rate"` // requests/s asked for; 0 in a closed loop
	Timeout          time.Duration `json:"timeout_ns"`
	// Elapsed runs from the first intended send to the last answer.
	Elapsed time.Duration `json:"elapsed_ns"`

	// Requests and Events were sent; Answered requests got an answer.
	Requests int64 `json:"requests"`
	Events   int64 `json:"events"`
	Answered int64 `json:"answered"`
	// Per-event outcomes of answered requests.
	Accepted   int64            `json:"accepted"`
	Duplicates int64            `json:"duplicates"`
	Rejected   map[string]int64 `json:"rejected"` // by reason
	// FirstRejection is one rejection's reason and message, to explain them.
	FirstRejection string `json:"first_rejection,omitempty"`
	// Failures are whole-request refusals by "code/REASON"; FailedEvents
	// the events they carried. An event the client target gave up on
	// (client:UNDELIVERED) counts as a failure carrying one event.
	Failures     map[string]int64 `json:"failures"`
	FailedEvents int64            `json:"failed_events"`
	// Requests without an answer: Timeouts passed their deadline while the
	// run went on, Interrupted were cut off by the run's end, Errors by kind
	// are transport failures and answers that did not parse.
	// Unsent requests were due in the open loop's schedule before the end
	// but never sent: the run fell that far behind.
	Unsent           int64            `json:"unsent"`
	Timeouts         int64            `json:"timeouts"`
	Interrupted      int64            `json:"interrupted"`
	UnansweredEvents int64            `json:"unanswered_events"`
	Errors           map[string]int64 `json:"errors"`
	FirstError       string           `json:"first_error,omitempty"`
	// RetryableWithoutWait counts retryable refusals (per event or whole
	// request) that came without a retry_after: each is a contract breach.
	RetryableWithoutWait int64 `json:"retryable_without_wait"`
	// Client is what the official client did under the client target:
	// its gateway requests, and the events it retried or gave up on.
	Client *ClientStats `json:"client,omitempty"`

	AcceptedPerSec float64 `json:"accepted_per_sec"`
	RequestsPerSec float64 `json:"requests_per_sec"`
	Latency        Latency `json:"latency"`

	// SelfCPU is this process's CPU over the run; Watched the --watch-pid
	// process's. The per-event figures divide by accepted events.
	SelfCPU            time.Duration `json:"self_cpu_ns"`
	SelfCPUPerEvent    time.Duration `json:"self_cpu_per_event_ns"`
	Watched            *ProcStats    `json:"watched,omitempty"`
	WatchedCPUPerEvent time.Duration `json:"watched_cpu_per_event_ns,omitempty"`
}

// Latency is the request latency distribution, from the histogram: each
// percentile within RelativeError of the true value; Max and Mean exact.
type Latency struct {
	Count uint64        `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	P999  time.Duration `json:"p999_ns"`
	Max   time.Duration `json:"max_ns"`
}

// finish derives the rates.
func (r *Report) finish() {
	if s := r.Elapsed.Seconds(); s > 0 {
		r.AcceptedPerSec = float64(r.Accepted) / s
		r.RequestsPerSec = float64(r.Answered) / s
	}
	if r.Accepted > 0 {
		r.SelfCPUPerEvent = r.SelfCPU / time.Duration(r.Accepted)
		if r.Watched != nil {
			r.WatchedCPUPerEvent = r.Watched.CPU / time.Duration(r.Accepted)
		}
	}
}

// WriteJSON writes r as one JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes r for a person to read.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	load := fmt.Sprintf("closed loop, %d workers", r.Concurrency)
	if r.Mode == "open" {
		load = fmt.Sprintf("open loop at %.1f requests/s, at most %d in flight", r.Rate, r.Concurrency)
	}
	fmt.Fprintf(&b, "run %s: %s %s, %s (%s, ~%d B), %d per request, %s\n",
		r.RunID, r.Target, r.Addr, r.EventType, r.Encoding, r.PayloadBytes, r.EventsPerRequest, load)
	fmt.Fprintf(&b, "elapsed   %s\n", round(r.Elapsed))
	fmt.Fprintf(&b, "sent      %d requests, %d events", r.Requests, r.Events)
	if r.Unsent > 0 {
		fmt.Fprintf(&b, "; %d requests due were never sent (behind schedule)", r.Unsent)
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "accepted  %d events (%.0f/s), %d duplicates, %.1f answered requests/s\n",
		r.Accepted, r.AcceptedPerSec, r.Duplicates, r.RequestsPerSec)
	fmt.Fprintf(&b, "rejected  %s\n", counts(r.Rejected))
	if r.FirstRejection != "" {
		fmt.Fprintf(&b, "          first: %s\n", r.FirstRejection)
	}
	fmt.Fprintf(&b, "failures  %s (%d events)\n", counts(r.Failures), r.FailedEvents)
	fmt.Fprintf(&b, "no answer %d timeouts, %d interrupted, errors %s\n", r.Timeouts, r.Interrupted, counts(r.Errors))
	if r.FirstError != "" {
		fmt.Fprintf(&b, "          first error: %s\n", r.FirstError)
	}
	if r.RetryableWithoutWait > 0 {
		fmt.Fprintf(&b, "          %d retryable refusals came without retry_after\n", r.RetryableWithoutWait)
	}
	if c := r.Client; c != nil {
		api := "Publish"
		if c.Stream {
			api = "PublishStream"
		}
		fmt.Fprintf(&b, "client    %d gateway requests (%s); %d events sent again: %s; undelivered %s\n",
			c.Requests, api, c.RetriedEvents(), counts(c.Retried), counts(c.Undelivered))
	}
	fmt.Fprintf(&b, "latency   %s\n", r.Latency)
	fmt.Fprintf(&b, "cpu       self %s (%s/event)", round(r.SelfCPU), r.SelfCPUPerEvent)
	if r.Watched != nil {
		fmt.Fprintf(&b, "; pid %d %s (%s/event), max RSS %.1f MiB",
			r.Watched.PID, round(r.Watched.CPU), r.WatchedCPUPerEvent, float64(r.Watched.MaxRSS)/(1<<20))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func counts(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
