// Package pull is sluice's pollers: each pulls pages from one partner's
// HTTP API and admits every item through the gateway's checks and
// admission, exactly like a pushed event (Ingester, which
// *gateway.Service implements).
//
// # Usage
//
//	cfg := pull.NewDefaultConfig()
//	cfg.Name, cfg.URL = "acme-orders", "https://api.acme.test/orders?cursor={cursor}"
//	cfg.Pagination.Cursor, cfg.Items = "/next", "/data"
//	cfg.Mapping = pull.MappingConfig{ID: eventmap.Pointer("/id"), Type: eventmap.FixedType("examples.shop.v1.OrderPlaced"),
//		OccurredAt: eventmap.Pointer("/created_at")}
//	p, err := pull.NewPoller(cfg, svc, store) // store: a CursorStore
//	err = p.Run(ctx) // until ctx ends, or an *AuthError
//
// A Poller runs alone against any CursorStore. Package pull/ownership
// runs the configured pollers across replicas, one owner each, and keeps
// their cursors in Kafka; that is how the gateway runs them.
//
// # Exactly the right pages
//
// A page's items are mapped to events by package eventmap, the mapping
// the webhook endpoint uses too (id, occurred_at, partition key by JSON
// pointer; the type fixed, or the item's own through a table of contract
// types; the payload is the contract message's JSON), and admitted in one
// Ingest call. The next position (cursor, Link URL or page
// number) is saved only after every item is acknowledged (ACCEPTED or
// DUPLICATE) or refused for good (a non-retryable rejection, or an item
// that does not map: both are counted per partner and reason, and do not
// hold the page up; an item whose type the table lacks counts as
// UNKNOWN_EVENT_TYPE). If any item is refused retryably (BUFFER_FULL,
// UNAVAILABLE, RATE_LIMITED) the page is polled again after backoff, and
// its accepted items come back DUPLICATE. The event id is the partner's
// item id, so a repeated page is absorbed by the gateway's dedup window
// and by the sinks' upsert by event id. A crash between the
// acknowledgement and the save repeats at most that one page; no page is
// ever skipped, since the position only moves past a page once its items
// are settled.
//
// A page-numbered feed that is still growing is not advanced past a page
// with fewer than PageSize items, and a cursor feed that ends without a
// next cursor is polled again at its current cursor, so items appended
// later are not skipped (the repeats are duplicates).
//
// # Honoring the partner
//
// judgeResponse is the one place an answer is judged:
//
//   - 2xx: a page. The rate-limit headers (RateLimit, RateLimit-Remaining/
//     -Reset, X-RateLimit-Remaining/-Reset) are read on every answer: with at
//     most RateLimit.MinRemaining requests left, the next request waits for
//     the reset, before the partner refuses one. A reset of 1e9 or more is a
//     Unix timestamp (1e12 or more: milliseconds), a smaller one seconds
//     from now.
//   - 429 and 503: wait for Retry-After (seconds or HTTP date), else for the
//     rate-limit reset, else exponential backoff with full jitter; every
//     partner-given wait is capped by MaxRetryAfter.
//   - Other 5xx, timeouts, connection errors: backoff with full jitter; after
//     Breaker.Failures in a row the breaker opens, no request is made for
//     Breaker.Cooldown, then one probe decides: an answer closes it, a
//     failure opens it again. Any answer of the partner (401, 429, a failed
//     page included) counts as a success for the breaker: the partner is
//     up. The schedule is internal/backoff's and the breaker
//     internal/breaker's, as for the sinks and the spool's drainer.
//   - 401: the credentials are refreshed once (a new OAuth2 token, or the
//     bearer token read again from its environment variable) and the page is
//     retried; a second 401 in a row stops that poller with an *AuthError,
//     sluice_poller_up 0 and sluice_poller_auth_failures_total. The other
//     pollers keep running. A token endpoint that refuses the client (4xx,
//     or a 2xx with an error member) stops the poller the same way; one
//     that is down, slow or redirects off its origin is retried like a
//     page, behind the breaker. Tokens come from the client credentials
//     grant of golang.org/x/oauth2/clientcredentials (scopes, audience,
//     extra_params; the client authenticated per auth_style), sent over
//     the poller's own HTTP client, and are kept until RefreshBefore ahead
//     of their expires_in, counted on the poller's Clock.
//   - Other 4xx, and 2xx bodies that are not a page: the page is recorded as
//     failed (status and a bounded body prefix, in Status, a log line and
//     sluice_poller_page_failures_total), the position stays, and the page is
//     retried with backoff.
//
// The client-side limit (RateLimit.Rate) paces every page request. All
// waits go through the Clock, and the seconds waited are counted by cause
// in sluice_poller_wait_seconds_total.
//
// # One origin
//
// The poller's credentials go to the origin of Config.URL (scheme, host
// and port) and nowhere else; FirstURL must be on it too. Redirects of
// page and token requests are followed only on the origin of the request
// (https → http is another origin), whatever the WithHTTPClient client's
// CheckRedirect says; a redirect off it is refused before anything is sent
// there (outbound.StayOnOrigin) and judgeResponse counts it as a transient
// failure, so the poller backs off behind its breaker
// (sluice_poller_requests_total{status="off_origin_redirect"}). A next
// link, relative ones resolved against the URL that answered, must be on
// Config.URL's origin, wherever the page came from; one that is not fails
// the page and is not saved. A saved next URL is checked again before it
// is requested. Every request, the token request included, and the
// reading of its answer are bounded by RequestTimeout.
//
// URLs in log lines, in Status.LastFailure and in errors (net/http's
// *url.Error embeds the request URL) keep their query keys and lose the
// values (?api_key=REDACTED&cursor=REDACTED) and a userinfo password
// (outbound.RedactURL). No metric label carries a URL.
//
// # What survives a crash
//
// Nothing of a poller but what its CursorStore saved: the position past
// the last page whose items were all settled. A poller that restarts
// loads it and repeats at most the page it was on; tokens, the breaker's
// state, the backoff count and the partner's rate-limit advice are
// memory only and start afresh. A CursorStore whose Load fails is retried
// with backoff, never taken for "no cursor", since starting afresh would
// re-admit the feed's whole history.
//
// # What it does not do
//
//   - It does not persist events itself: durability is the gateway's
//     admission (Kafka or the disk spool).
//   - It does not follow a Link or a redirect to another origin
//     (credentials would leak); see One origin.
//   - It does not pick which replica polls a partner, nor keep cursors
//     itself: pull/ownership does both, over Kafka.
package pull
