package outbound

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://api.partner.test/orders?api_key=k3y&cursor=c1", "https://api.partner.test/orders?api_key=REDACTED&cursor=REDACTED"},
		{"https://api.partner.test/orders", "https://api.partner.test/orders"},
		{"https://api.partner.test/orders?", "https://api.partner.test/orders?"},
		{"https://api.partner.test/o?flag&token=s3cret", "https://api.partner.test/o?flag&token=REDACTED"},
		{"https://api.partner.test/o?token=", "https://api.partner.test/o?token=REDACTED"},
		{"https://api.partner.test/o?a=1;token=s3cret", "https://api.partner.test/o?a=REDACTED"},
		{"https://api.partner.test/o?a=b=c&&d=e", "https://api.partner.test/o?a=REDACTED&&d=REDACTED"},
		{"https://user:pa55@api.partner.test/o?x=1", "https://user:xxxxx@api.partner.test/o?x=REDACTED"},
		{"https://user@api.partner.test/o", "https://user@api.partner.test/o"},
		{"https://us:er:pa@ss@api.partner.test/o", "https://us:xxxxx@api.partner.test/o"},
		{"https://user:pw?token=s3cret@host/", "https://user:pw?token=REDACTED"}, // the query starts at the first "?", as in net/url
		{"//user:pw@host/p?q=1", "//user:xxxxx@host/p?q=REDACTED"},
		{"/relative/path?cursor=abc", "/relative/path?cursor=REDACTED"},
		{"/a//user:pw@b", "/a//user:pw@b"}, // a path, not an authority
		{"https://h/p#access_token=s3cret", "https://h/p#REDACTED"},
		{"https://h/p?x=1#", "https://h/p?x=REDACTED#"},
		{"https://h/p#frag?token=s3cret", "https://h/p#REDACTED"},
		{"http://[::1]:80/p?token=s3cret", "http://[::1]:80/p?token=REDACTED"},
		{"http://h/%zz?token=s3cret", "http://h/%zz?token=REDACTED"}, // does not parse; redacted anyway
		{"not a url token=s3cret", "not a url token=s3cret"},         // no query: nothing to cut
		{"", ""},
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := RedactURL(tc.want); got != tc.want {
			t.Errorf("RedactURL is not idempotent on %q: %q", tc.want, got)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"https://api.partner.test/a?x=1", "https://api.partner.test/b", true},
		{"https://api.partner.test/a", "https://API.Partner.test:443/b", true},
		{"http://api.partner.test/a", "http://api.partner.test:80/b", true},
		{"https://api.partner.test/a", "http://api.partner.test/a", false},
		{"https://127.0.0.1:8443/a", "http://127.0.0.1:8443/a", false},
		{"https://api.partner.test/a", "https://api.partner.test:8443/a", false},
		{"https://api.partner.test/a", "https://evil.partner.test/a", false},
		{"https://api.partner.test/a", "https://sub.api.partner.test/a", false},
		{"https://user:pw@api.partner.test/a", "https://api.partner.test/b", true},
		{"http://127.0.0.1:1000/", "http://127.0.0.1:1001/", false},
		{"http://[::1]:80/", "http://[::1]/", true},
	} {
		a, _ := url.Parse(tc.a)
		b, _ := url.Parse(tc.b)
		if got := SameOrigin(a, b); got != tc.same {
			t.Errorf("SameOrigin(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// recording is an httptest server that records every request and its
// Authorization header.
type recording struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newRecording(t *testing.T, tls bool, h http.HandlerFunc) *recording {
	r := &recording{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.mu.Unlock()
		h(w, req)
	})
	if tls {
		r.Server = httptest.NewTLSServer(handler)
	} else {
		r.Server = httptest.NewServer(handler)
	}
	t.Cleanup(r.Close)
	return r
}

func (r *recording) Auths() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

func ok(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") }

// TestStayOnOrigin: a redirect to another origin, or from https to http,
// sends nothing there and fails with ErrOffOrigin; one on the origin is
// followed with its headers; the client's own CheckRedirect still judges
// the redirects that stay.
func TestStayOnOrigin(t *testing.T) {
	get := func(c *http.Client, u string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer s3cret")
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}
	t.Run("another origin", func(t *testing.T) {
		attacker := newRecording(t, false, ok)
		partner := newRecording(t, false, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, attacker.URL+"/steal?x=1", http.StatusTemporaryRedirect)
		})
		_, err := get(StayOnOrigin(&http.Client{}), partner.URL+"/items?token=s3cret")
		if !errors.Is(err, ErrOffOrigin) {
			t.Fatalf("err = %v, want ErrOffOrigin", err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("error %q holds the query", err)
		}
		if n := len(attacker.Auths()); n != 0 {
			t.Errorf("the other origin got %d requests", n)
		}
	})
	t.Run("https to http on the same host", func(t *testing.T) {
		plain := newRecording(t, false, ok)
		secure := newRecording(t, true, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusFound)
		})
		_, err := get(StayOnOrigin(secure.Client()), secure.URL+"/items")
		if !errors.Is(err, ErrOffOrigin) {
			t.Fatalf("err = %v, want ErrOffOrigin", err)
		}
		if n := len(plain.Auths()); n != 0 {
			t.Errorf("the http server got %d requests", n)
		}
	})
	t.Run("same origin", func(t *testing.T) {
		var srv *recording
		srv = newRecording(t, false, func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/old" {
				http.Redirect(w, r, srv.URL+"/new", http.StatusMovedPermanently)
				return
			}
			ok(w, r)
		})
		resp, err := get(StayOnOrigin(&http.Client{}), srv.URL+"/old")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("resp %v, err %v", resp, err)
		}
		if got := strings.Join(srv.Auths(), ","); got != "Bearer s3cret,Bearer s3cret" {
			t.Errorf("Authorization per request %q", got)
		}
	})
	t.Run("the client's own policy", func(t *testing.T) {
		var srv *recording
		srv = newRecording(t, false, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, srv.URL+"/again", http.StatusFound)
		})
		c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := get(StayOnOrigin(c), srv.URL+"/loop")
		if err != nil || resp.StatusCode != http.StatusFound {
			t.Fatalf("resp %v, err %v: want the 302 itself", resp, err)
		}
		if c.CheckRedirect == nil {
			t.Error("StayOnOrigin changed the client it was given")
		}
		_, err = get(StayOnOrigin(&http.Client{}), srv.URL+"/loop")
		if err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
			t.Fatalf("err = %v, want the redirect limit", err)
		}
	})
}

func TestRedactError(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	target := srv.URL + "/items?token=s3cret"
	srv.Close()
	_, err := http.Get(target)
	if err == nil {
		t.Fatal("closed server answered")
	}
	red := RedactError(err)
	if strings.Contains(red.Error(), "s3cret") || !strings.Contains(red.Error(), "token=REDACTED") {
		t.Errorf("redacted error %q", red)
	}
	var ue *url.Error
	if !errors.As(red, &ue) || !errors.Is(red, errors.Unwrap(err)) {
		t.Errorf("redacted error %#v lost its cause", red)
	}
	if !strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the original error was changed: %q", err)
	}
	if _, err := http.NewRequest(http.MethodGet, "http://h/%zz?token=s3cret", nil); err == nil {
		t.Fatal("bad URL parsed")
	} else if got := RedactError(err).Error(); strings.Contains(got, "s3cret") {
		t.Errorf("parse error: %q", got)
	}
	plain := errors.New("no url")
	if RedactError(plain) != plain || RedactError(nil) != nil {
		t.Error("errors without a URL changed")
	}
}
