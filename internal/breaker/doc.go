// Package breaker is sluice's one circuit breaker, for sinks and for
// partner APIs.
//
// A Breaker starts Closed and lets every call through. It opens on either
// of two rules, each off when its threshold is zero:
//
//   - a failure ratio: at least MinRequests calls in the sliding Window and
//     failures / calls at or above FailureRatio (the window is counted in
//     ten buckets);
//   - consecutive failures: ConsecutiveFailures failures with no success
//     between them.
//
// Open lets nothing through until Cooldown has passed since it opened.
// Then one caller gets the probe permit (HalfOpen); the probe's outcome
// closes the breaker, clearing its counts, or opens it again. Only the
// caller's judgement of an outcome counts: a permanent failure, the input's
// fault rather than the dependency's, is a success here.
//
// A Breaker is safe for concurrent use. It keeps its state in memory only.
package breaker
