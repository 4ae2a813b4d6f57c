package openapi

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
)

// writeRecorder keeps the slices it is handed, not copies of them.
type writeRecorder struct {
	header http.Header
	code   int
	writes [][]byte
}

func (w *writeRecorder) Header() http.Header  { return w.header }
func (w *writeRecorder) WriteHeader(code int) { w.code = code }
func (w *writeRecorder) Write(b []byte) (int, error) {
	w.writes = append(w.writes, b)
	return len(b), nil
}

// testLimits are the gateway's default limits.
var testLimits = Limits{MaxEventsPerRequest: 500, MaxRequestBytes: 4 << 20, MaxEventAge: 7 * 24 * time.Hour, MaxEventFuture: 5 * time.Minute}

func exampleDocs(t *testing.T) *Docs {
	t.Helper()
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(func() *contract.Registry { return registry }, testLimits, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDocsNotCompressedPerRequest: the compressed documents are made once,
// with the description: every request for one writes it in one Write of
// the very slice the first request wrote, in each coding. Compressing per
// request would hand the writer new bytes each time.
func TestDocsNotCompressedPerRequest(t *testing.T) {
	d := exampleDocs(t)
	for _, coding := range []string{"gzip", "zstd"} {
		for _, path := range []string{"/openapi.json", "/docs"} {
			var first *byte
			for i := range 3 {
				w := &writeRecorder{header: http.Header{}}
				d.Document(path).Serve(w, httptest.NewRequest(http.MethodGet, path, nil), coding)
				if w.code != http.StatusOK || w.header.Get("Content-Encoding") != coding {
					t.Fatalf("%s (%s): %d, Content-Encoding %q", path, coding, w.code, w.header.Get("Content-Encoding"))
				}
				if len(w.writes) != 1 {
					t.Fatalf("%s (%s): %d writes, want the document in one", path, coding, len(w.writes))
				}
				p := unsafe.SliceData(w.writes[0])
				if i == 0 {
					first = p
				} else if p != first {
					t.Fatalf("%s (%s): request %d wrote other bytes than the first: compressed again", path, coding, i+1)
				}
			}
		}
	}
}

// TestDocsFollowTheRegistry: the documents served are those of the
// registry served now. A registry prepared before its swap is served as
// prepared, not built again; one swapped in without Prepare is described
// on its first request, and then built once.
func TestDocsFollowTheRegistry(t *testing.T) {
	all, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	logsOnly, err := contract.Load(examples.Contracts, []string{"examples.logs.v1.LogLine"})
	if err != nil {
		t.Fatal(err)
	}
	served := all
	d, err := New(func() *contract.Registry { return served }, testLimits, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	describes := func(typ string) bool {
		w := httptest.NewRecorder()
		d.Document("/openapi.json").Serve(w, httptest.NewRequest(http.MethodGet, "/openapi.json", nil), "")
		return strings.Contains(w.Body.String(), `"Event.`+typ+`"`)
	}
	if !describes("examples.shop.v1.OrderPlaced") {
		t.Fatal("the first registry's types are not described")
	}

	if err := d.Prepare(logsOnly); err != nil {
		t.Fatal(err)
	}
	prepared := d.prepared.Load()
	if !describes("examples.shop.v1.OrderPlaced") {
		t.Error("a prepared registry is served before its swap")
	}
	served = logsOnly
	if describes("examples.shop.v1.OrderPlaced") || !describes("examples.logs.v1.LogLine") {
		t.Error("the swapped registry is not the one described")
	}
	if d.served.Load() != prepared {
		t.Error("the prepared documents were built again at the swap")
	}

	served = all // swapped without Prepare
	first := d.Document("/docs")
	if !describes("examples.shop.v1.OrderPlaced") {
		t.Error("a registry swapped in without Prepare is not described")
	}
	if d.Document("/docs") != first {
		t.Error("the documents of a registry swapped in without Prepare are built on every request")
	}
}
