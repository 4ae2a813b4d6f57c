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
//
// # Calls that change state
//
// Probes and scrapes present nothing, so the listener asks nothing of a
// GET, HEAD or OPTIONS call. A call of any other method may change state
// (a component's POST /admin/contracts/reload, say): whoever registered
// the route, it is served only with a credential, one of
//
//   - a client certificate the listener's TLS verified: admin.tls with
//     client_ca_file and client_auth request (probes without one still get
//     in) or require;
//   - Authorization: Bearer TOKEN, with the token of admin.auth.token_file
//     (read again when the file changes, at most once a second, on such a
//     call; a file that is gone or holds no good token keeps the token
//     before) or admin.auth.token_env (read at start).
//
// Without one the call is answered 401 UNAUTHENTICATED with
// WWW-Authenticate: Bearer (error="invalid_token" for a wrong token); on a
// listener configured with neither, 403 NO_CREDENTIAL_CONFIGURED, saying
// how to configure one: a state-changing endpoint is never open by
// default. Refusals are JSON ({"error": {"reason": ...}}) and counted in
// sluice_admin_refused_total{reason} (no_credential, wrong_credential,
// none_configured). Tokens are compared by their SHA-256 in constant
// time, and are never logged or answered.
package admin
