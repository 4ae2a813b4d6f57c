// Package outbound holds the two rules every outbound HTTP request of
// sluice follows, for the clients that carry credentials to another
// party: the pollers (partner APIs and their OAuth2 token endpoints) and
// the HTTP sink.
//
//   - Redirects stay on the origin of the request that was made (RFC 6454:
//     scheme, host and port, the scheme's default port filled in).
//     StayOnOrigin wraps a client so that a redirect to another origin,
//     https → http included, is refused with ErrOffOrigin before anything
//     is sent there; the headers, Authorization among them, and a 307/308
//     body therefore never leave the origin by a redirect. Each caller
//     classifies ErrOffOrigin in its own one place.
//   - URLs in logs and error messages go through RedactURL: query values,
//     a userinfo password and the fragment are replaced, the keys and the
//     rest are kept, so an operator can still tell which endpoint failed.
//     RedactError does the same to the *url.Error that net/http returns,
//     whose message embeds the request URL.
//
// It does not check the URLs a caller builds or follows itself (a Link
// header's next page, a saved position): SameOrigin is there for that.
package outbound
