// Package devpartner is the partner API that `sluice dev` polls: an
// in-process HTTP server on loopback and the poller config that pulls it.
// It exists to show the pollers at work without a real partner; nothing
// in production uses it.
//
// # What it serves
//
// examples.shop.v1.OrderPlaced orders with cursor pagination: a backlog of
// 25 orders at start and one more every half second, pages of 10 at
// GET /orders?cursor=N (the next cursor is the number of the next order).
// Every 5th request is answered 429 with Retry-After: 1, and every 40th
// order has a currency that breaks the contract, so `sluice dev` shows
// throttling and typed rejections too. Config is the poller of that feed
// under a source of its own, its name "demo-shop".
//
// # Guarantees
//
// An order depends only on its number and the partner's start time, so a
// page polled again gives the same orders with the same ids. The server listens on
// 127.0.0.1 only; stop shuts it down and waits for it.
//
// # What survives a crash
//
// Nothing: the feed lives in memory and starts again from order 0 at the
// next Start, with a new start time.
//
// # What it does not do
//
// It does not authenticate, paginate by link or page number, or fail the
// way a real partner's outage does (5xx, timeouts): the pull package's
// tests cover those against scripted partners.
package devpartner
