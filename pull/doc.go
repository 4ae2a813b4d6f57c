// Package pull is sluice's pollers: each pulls pages from one partner's
// HTTP API and admits every item through the gateway's checks and
// admission, exactly like a pushed event (Ingester, which
// *gateway.Service implements).
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
// A page's items are mapped to events by package eventmap (the mapping
// webhook sources use too) and admitted in one Ingest call. The next
// position (cursor, Link URL or page number) is saved only after every
// item is acknowledged (ACCEPTED or DUPLICATE) or refused for good (a
// non-retryable rejection, or an item that does not map: counted per
// partner and reason). If any item is refused retryably the page is
// polled again after backoff; its accepted items come back DUPLICATE. The
// event id is the partner's item id, so a repeated page is absorbed by
// the gateway's dedup window and the sinks. No page is ever skipped. A
// growing page-numbered feed is not advanced past a short page, and a
// cursor feed without a next cursor is polled again at its cursor.
//
// # Honoring the partner
//
// judgeResponse is the one place an answer is judged (poller.go): 429 and
// 503 wait for Retry-After or the rate-limit reset; the rate-limit headers
// pace requests before the partner refuses one; other 5xx and connection
// errors back off with full jitter behind a breaker (internal/backoff,
// internal/breaker); 401 refreshes the credentials once, and a second in a
// row stops that poller with an *AuthError (the others keep running);
// other 4xx fail the page, which is retried. Every partner-given wait is
// capped by MaxRetryAfter; RateLimit.Rate paces every request. All waits
// go through the Clock and are counted by cause.
//
// # One origin
//
// The poller's credentials go to the origin of Config.URL (scheme, host
// and port) and nowhere else. Redirects of page and token requests are
// followed only on the request's origin, whatever the WithHTTPClient
// client says; one off it is refused before anything is sent and is a
// transient failure. A next link must be on Config.URL's origin, and a
// saved next URL is checked again before it is requested. Every request
// and the reading of its answer are bounded by RequestTimeout. URLs in
// logs, Status and errors lose their query values and userinfo password;
// no metric label carries a URL.
//
// # What survives a crash
//
// Nothing of a poller but what its CursorStore saved: the position past
// the last page whose items were all settled. A poller that restarts
// repeats at most the page it was on; tokens, the breaker, the backoff and
// the partner's rate-limit advice start afresh. A CursorStore whose Load
// fails is retried with backoff, never taken for "no cursor", since
// starting afresh would re-admit the feed's whole history.
//
// # What it does not do
//
//   - It does not persist events itself: durability is the gateway's
//     admission (Kafka or the disk spool).
//   - It does not follow a Link or a redirect to another origin.
//   - It does not pick which replica polls a partner, nor keep cursors
//     itself: pull/ownership does both, over Kafka.
package pull
