package openapi

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// docsServer serves the example contracts' documents, in the coding the
// request's Accept-Encoding names (one token, or none), as the gateway
// serves them once it has chosen the coding.
func docsServer(t *testing.T) string {
	t.Helper()
	d := exampleDocs(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc := d.Document(r.URL.EscapedPath())
		if doc == nil {
			http.NotFound(w, r)
			return
		}
		doc.Serve(w, r, r.Header.Get("Accept-Encoding"))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// fetch sends one request with the headers given, in pairs, without Go's
// transparent gzip, and returns the answer and its body as sent.
func fetch(t *testing.T, method, url string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func decode(t *testing.T, coding string, b []byte) []byte {
	t.Helper()
	var r io.Reader
	switch coding {
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		defer zr.Close()
		r = zr
	default:
		return b
	}
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("%s: %v", coding, err)
	}
	return out
}

// TestDocsPrecompressed: /openapi.json and /docs are answered in the
// coding asked for, gzip or zstd, with Vary: Accept-Encoding and an ETag
// of that representation; the bytes decode to the identity document; a
// request naming its ETag in If-None-Match is answered 304; HEAD carries
// the same headers and no body.
func TestDocsPrecompressed(t *testing.T) {
	base := docsServer(t)
	for _, path := range []string{"/openapi.json", "/docs"} {
		plain, identity := fetch(t, http.MethodGet, base+path)
		if plain.StatusCode != http.StatusOK || plain.Header.Get("Content-Encoding") != "" || len(identity) == 0 {
			t.Fatalf("GET %s: %d %q, %d bytes", path, plain.StatusCode, plain.Header.Get("Content-Encoding"), len(identity))
		}
		tags := map[string]string{"identity": plain.Header.Get("ETag")}
		for _, coding := range []string{"gzip", "zstd"} {
			resp, body := fetch(t, http.MethodGet, base+path, "Accept-Encoding", coding)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != coding {
				t.Fatalf("GET %s, Accept-Encoding %s: %d, Content-Encoding %q", path, coding, resp.StatusCode, resp.Header.Get("Content-Encoding"))
			}
			if !slices.Contains(resp.Header.Values("Vary"), "Accept-Encoding") {
				t.Errorf("GET %s (%s): Vary %q", path, coding, resp.Header.Values("Vary"))
			}
			if got := decode(t, coding, body); !bytes.Equal(got, identity) {
				t.Errorf("GET %s (%s): decodes to %d bytes, not the %d of the document", path, coding, len(got), len(identity))
			}
			if len(body) >= len(identity) {
				t.Errorf("GET %s (%s): %d bytes for a document of %d", path, coding, len(body), len(identity))
			}
			tags[coding] = resp.Header.Get("ETag")
			if resp.Header.Get("Content-Length") != "" && resp.ContentLength != int64(len(body)) {
				t.Errorf("GET %s (%s): Content-Length %d for %d bytes", path, coding, resp.ContentLength, len(body))
			}
			head, none := fetch(t, http.MethodHead, base+path, "Accept-Encoding", coding)
			if head.StatusCode != http.StatusOK || len(none) != 0 || head.Header.Get("Content-Encoding") != coding || head.Header.Get("ETag") != tags[coding] {
				t.Errorf("HEAD %s (%s): %d, %d bytes, %q %q", path, coding, head.StatusCode, len(none), head.Header.Get("Content-Encoding"), head.Header.Get("ETag"))
			}
		}
		seen := map[string]bool{}
		for coding, tag := range tags {
			if !strings.HasPrefix(tag, `"`) || !strings.HasSuffix(tag, `"`) || seen[tag] {
				t.Errorf("GET %s (%s): ETag %q: want a strong tag of its own per coding, got %v", path, coding, tag, tags)
			}
			seen[tag] = true
		}
		for coding, tag := range tags {
			accept := coding
			if coding == "identity" {
				accept = "identity"
			}
			resp, body := fetch(t, http.MethodGet, base+path, "Accept-Encoding", accept, "If-None-Match", `"other", `+tag)
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != tag {
				t.Errorf("GET %s (%s) If-None-Match its ETag: %d with %d bytes, ETag %q", path, coding, resp.StatusCode, len(body), resp.Header.Get("ETag"))
			}
		}
		if resp, _ := fetch(t, http.MethodGet, base+path, "Accept-Encoding", "gzip", "If-None-Match", tags["zstd"]); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s (gzip) If-None-Match the zstd ETag: %d, want 200", path, resp.StatusCode)
		}
	}
}

// TestOpenAPIServers: the description names where to send requests as
// the relative URL "/", which a client resolves against the URL it
// fetched the description from: never a host taken from the request.
func TestOpenAPIServers(t *testing.T) {
	_, body := fetch(t, http.MethodGet, docsServer(t)+"/openapi.json", "Host", "attacker.example")
	var doc struct {
		Servers []struct {
			URL         string `json:"url"`
			Description string `json:"description"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != "/" || doc.Servers[0].Description == "" {
		t.Fatalf("servers %+v, want one, the relative URL /, described", doc.Servers)
	}
	if bytes.Contains(body, []byte("attacker.example")) {
		t.Error("the description repeats the request's Host")
	}
}
