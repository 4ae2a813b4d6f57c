// Package admin serves a process's operator endpoints on a listener of
// their own, apart from the API: loopback by default, so that metrics,
// readiness and profiles are not open to the API's callers.
//
//	GET /metrics        Prometheus exposition of the Gatherer given
//	GET /healthz        200 while the process serves at all (liveness)
//	GET /readyz         200 when the Readiness says so, else 503 and why
//	/debug/pprof/...    runtime profiles, only with Config.Pprof
//
// /readyz only reads the last result of a Checker: a probe never waits on
// the check itself, and the check runs whether or not anyone asks, so that
// other consumers of readiness (gRPC health) see the same answer.
//
// A Checker owns one goroutine: Start starts it, Stop stops it and waits.
// Each check is bounded by its timeout; until the first check has
// answered, the Checker reports ErrNotChecked.
//
// TLS is optional (WithTLS); without it the listener speaks plain HTTP,
// which Config.Validate allows only for loopback when profiles are served.
package admin
