package outbound

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrOffOrigin is wrapped by the error of a redirect that StayOnOrigin
// refused: the target's origin is not the first request's.
var ErrOffOrigin = errors.New("outbound: redirect leaves the origin")

// maxRedirects is net/http's default limit, kept when a client brings no
// CheckRedirect of its own.
const maxRedirects = 10

// Origin is a URL's origin: the lower-cased scheme and host, and the port,
// the scheme's default one when the URL names none.
type Origin struct {
	Scheme, Host, Port string
}

// OriginOf returns u's origin.
func OriginOf(u *url.URL) Origin {
	o := Origin{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Hostname()), Port: u.Port()}
	if o.Port == "" {
		switch o.Scheme {
		case "http":
			o.Port = "80"
		case "https":
			o.Port = "443"
		}
	}
	return o
}

func (o Origin) String() string {
	host := o.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return o.Scheme + "://" + host + ":" + o.Port
}

// SameOrigin reports whether a and b have one origin. https and http on
// one host are two origins.
func SameOrigin(a, b *url.URL) bool { return OriginOf(a) == OriginOf(b) }

// StayOnOrigin returns a copy of c, sharing its transport, that refuses
// every redirect leaving the origin of the first request of the chain.
// Redirects that stay are then judged by c's own CheckRedirect, or, when c
// has none, followed up to net/http's limit of 10.
func StayOnOrigin(c *http.Client) *http.Client {
	g := *c
	next := c.CheckRedirect
	g.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 && !SameOrigin(via[0].URL, req.URL) {
			return fmt.Errorf("%w: %s redirects to %s", ErrOffOrigin,
				RedactURL(via[len(via)-1].URL.String()), RedactURL(req.URL.String()))
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("outbound: stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &g
}
