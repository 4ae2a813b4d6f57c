package openapi

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"

	"github.com/sluicehq/sluice/contract"
)

// documents are what GET /openapi.json and GET /docs answer for one
// registry, each compressed once, when it is built.
type documents struct {
	registry *contract.Registry
	spec     *Document
	page     *Document
}

// The codings a document is served in, by their index in document.
const (
	codingIdentity = iota
	codingGzip
	codingZstd
)

// codingIndex is the index of the coding named (a Content-Encoding
// token); any name but gzip and zstd is the identity.
func codingIndex(name string) int {
	switch name {
	case "gzip":
		return codingGzip
	case "zstd":
		return codingZstd
	}
	return codingIdentity
}

// Document is one served document in each coding it is served in, made
// once: an unauthenticated GET costs the gateway a write, not a
// compression. Each coding has an ETag of its own (RFC 9110 makes a
// strong validator one representation's), the identity's digest with the
// coding after it.
type Document struct {
	contentType string
	body        [3][]byte // by coding index
	etag        [3]string
}

func newDocument(contentType string, body []byte) (*Document, error) {
	d := &Document{contentType: contentType}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(body); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	// A window well under RFC 9659's 8 MiB bound for the zstd coding, which
	// clients may enforce.
	ze, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1),
		zstd.WithWindowSize(1<<20))
	if err != nil {
		return nil, err
	}
	zs := ze.EncodeAll(body, nil)
	if err := ze.Close(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(body)
	tag := hex.EncodeToString(sum[:16])
	d.body[codingIdentity], d.etag[codingIdentity] = body, `"`+tag+`"`
	d.body[codingGzip], d.etag[codingGzip] = gz.Bytes(), `"`+tag+`-gzip"`
	d.body[codingZstd], d.etag[codingZstd] = zs, `"`+tag+`-zstd"`
	return d, nil
}

// Serve answers r, a GET or HEAD, with the document in the coding named
// (the Content-Encoding the caller accepts, "identity" or "" for none):
// 304 when If-None-Match names that coding's ETag, HEAD without a body.
func (d *Document) Serve(w http.ResponseWriter, r *http.Request, coding string) {
	c := codingIndex(coding)
	h := w.Header()
	h.Set("Content-Type", d.contentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	if d.contentType != "application/json" {
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	}
	if !slices.Contains(h.Values("Vary"), "Accept-Encoding") {
		h.Add("Vary", "Accept-Encoding")
	}
	h.Set("ETag", d.etag[c])
	if etagMatches(r.Header.Values("If-None-Match"), d.etag[c]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if c != codingIdentity {
		h.Set("Content-Encoding", coding)
	}
	h.Set("Content-Length", strconv.Itoa(len(d.body[c])))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(d.body[c])
	}
}

// etagMatches is If-None-Match's weak comparison of each tag of the
// header lines with etag; "*" matches any.
func etagMatches(lines []string, etag string) bool {
	for _, line := range lines {
		for tag := range strings.SplitSeq(line, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == etag {
				return true
			}
		}
	}
	return false
}

// Docs holds the documents of the registry served and of the one a
// reload prepared, which the swap makes the served one. Each registry's
// documents are built once. Its methods may be called concurrently.
type Docs struct {
	// current is the registry served now.
	current  func() *contract.Registry
	limits   Limits
	log      *slog.Logger
	mu       sync.Mutex // serializes building
	served   atomic.Pointer[documents]
	prepared atomic.Pointer[documents]
}

// New builds the documents of the registry served now, which current
// returns on every request for a document, under limits. Its error is a
// bug (a schema that does not marshal). log hears of a reloaded registry
// whose documents do not build.
func New(current func() *contract.Registry, limits Limits, log *slog.Logger) (*Docs, error) {
	c := &Docs{current: current, limits: limits, log: log}
	d, err := c.build(current())
	if err != nil {
		return nil, err
	}
	c.served.Store(d)
	return c, nil
}

// Prepare builds the documents of registry, to be served once it is: a
// reload calls it before the registry is swapped in, so that it fails
// before the swap, not after.
func (c *Docs) Prepare(registry *contract.Registry) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.build(registry)
	if err != nil {
		return err
	}
	c.prepared.Store(d)
	return nil
}

// Document is the document served at path, as sent (escaped), for the
// registry served: the description at /openapi.json, its page at /docs,
// or nil for any other path.
func (c *Docs) Document(path string) *Document {
	switch path {
	case "/openapi.json":
		return c.of(c.current()).spec
	case "/docs":
		return c.of(c.current()).page
	}
	return nil
}

// of returns the documents of registry: the served ones, the prepared
// ones, or (a registry swapped in without Prepare) built now.
// A registry whose documents do not build keeps the last ones served,
// and the error is logged: the description is a bug away from right,
// never a reason to refuse a request.
func (c *Docs) of(registry *contract.Registry) *documents {
	if d := c.served.Load(); d.registry == registry {
		return d
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.prepared.Load(); d != nil && d.registry == registry {
		c.served.Store(d)
		c.prepared.Store(nil)
		return d
	}
	if d := c.served.Load(); d.registry == registry {
		return d
	}
	d, err := c.build(registry)
	if err != nil {
		c.log.Error("gateway: the REST API's description of the reloaded contracts does not build; serving the previous one", "err", err)
		return c.served.Load()
	}
	c.served.Store(d)
	return d
}

func (c *Docs) build(registry *contract.Registry) (*documents, error) {
	spec, err := describe(registry, c.limits)
	if err != nil {
		return nil, err
	}
	page, err := docsPage(spec)
	if err != nil {
		return nil, fmt.Errorf("gateway: docs page: %w", err)
	}
	d := &documents{registry: registry}
	if d.spec, err = newDocument("application/json", spec); err != nil {
		return nil, fmt.Errorf("gateway: openapi: compressing: %w", err)
	}
	if d.page, err = newDocument("text/html; charset=utf-8", page); err != nil {
		return nil, fmt.Errorf("gateway: docs page: compressing: %w", err)
	}
	return d, nil
}

// docsPage renders a page of the description: the route, the event
// types with their payload fields, and the statuses. It reads the built
// description, so the page cannot say what the description does not.
func docsPage(spec []byte) ([]byte, error) {
	var doc struct {
		Info struct {
			Title       string `json:"title"`
			Description string `json:"description"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Description string                     `json:"description"`
			Responses   map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		return nil, err
	}
	type field struct{ Name, Schema string }
	type eventType struct {
		Name   string
		Fields []field
	}
	type status struct{ Code, Text string }
	page := struct {
		Title, Description, Operation string
		Types                         []eventType
		Statuses                      []status
	}{Title: doc.Info.Title, Description: doc.Info.Description}
	op := doc.Paths["/v1/events"]["post"]
	page.Operation = op.Description
	for code, raw := range op.Responses {
		var r struct {
			Description string `json:"description"`
		}
		_ = json.Unmarshal(raw, &r)
		page.Statuses = append(page.Statuses, status{code, r.Description})
	}
	sort.Slice(page.Statuses, func(i, j int) bool { return page.Statuses[i].Code < page.Statuses[j].Code })
	for name := range doc.Components.Schemas {
		typ, ok := strings.CutPrefix(name, "Event.")
		if !ok {
			continue
		}
		var props struct {
			Properties map[string]json.RawMessage `json:"properties"`
			// A field's other names: it may be sent under one only.
			Aliases map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"dependentSchemas"`
		}
		_ = json.Unmarshal(doc.Components.Schemas[typ], &props)
		et := eventType{Name: typ}
		alias := map[string]bool{}
		for _, d := range props.Aliases {
			for other := range d.Properties {
				alias[other] = true
			}
		}
		for f, s := range props.Properties {
			if alias[f] {
				continue
			}
			name := f
			for other := range props.Aliases[f].Properties {
				name += " or " + other
			}
			et.Fields = append(et.Fields, field{name, string(s)})
		}
		sort.Slice(et.Fields, func(i, j int) bool { return et.Fields[i].Name < et.Fields[j].Name })
		page.Types = append(page.Types, et)
	}
	sort.Slice(page.Types, func(i, j int) bool { return page.Types[i].Name < page.Types[j].Name })
	var out bytes.Buffer
	if err := docsTemplate.Execute(&out, page); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

var docsTemplate = template.Must(template.New("docs").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}
code,pre{font:13px ui-monospace,monospace}pre{white-space:pre-wrap;margin:0}
table{border-collapse:collapse;width:100%}td,th{border-top:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}</style>
</head><body>
<h1>{{.Title}}</h1>
<p>{{.Description}} The machine-readable description is <a href="/openapi.json">/openapi.json</a> (OpenAPI 3.1).</p>
<h2><code>POST /v1/events</code></h2>
<p>{{.Operation}}</p>
<p>Authenticate with <code>X-Api-Key: &lt;key&gt;</code> or <code>Authorization: Bearer &lt;key&gt;</code>.
The body is <code>{"events": [{"id", "type", "occurred_at", "partition_key", "payload", "attributes"}]}</code>.</p>
<h2>Answers</h2>
<table><tr><th>status</th><th>meaning</th></tr>
{{range .Statuses}}<tr><td>{{.Code}}</td><td>{{.Text}}</td></tr>
{{end}}</table>
<h2>Event types</h2>
{{range .Types}}<h3><code>{{.Name}}</code></h3>
<table><tr><th>payload field</th><th>schema</th></tr>
{{range .Fields}}<tr><td><code>{{.Name}}</code></td><td><pre>{{.Schema}}</pre></td></tr>
{{end}}</table>
{{end}}
</body></html>
`))
