package client

import (
	"time"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// Metrics receives what the client does; client/clientprom implements it
// on a Prometheus registerer. Its methods are called from the client's
// goroutines at once and must not block.
type Metrics interface {
	// Request: one request (attempt) of n events ended after d; err is nil
	// when the gateway answered per event.
	Request(events int, d time.Duration, err error)
	// Final: an event got its final result.
	Final(outcome ingestv1.Outcome, reason ingestv1.Reason, attempts int, sinceEnqueue time.Duration)
	// Retry: n events will be sent again because of reason (UNAVAILABLE for a connection error or deadline).
	Retry(reason ingestv1.Reason, n int)
	// Buffered: what the buffer holds now.
	Buffered(events, bytes int)
}

type nopMetrics struct{}

func (nopMetrics) Request(int, time.Duration, error)                           {}
func (nopMetrics) Final(ingestv1.Outcome, ingestv1.Reason, int, time.Duration) {}
func (nopMetrics) Retry(ingestv1.Reason, int)                                  {}
func (nopMetrics) Buffered(int, int)                                           {}
