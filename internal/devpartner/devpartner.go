package devpartner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/backoff"
	"github.com/sluicehq/sluice/internal/eventmap"
	"github.com/sluicehq/sluice/pull"
)

// Demo partner behaviour.
const (
	demoPageSize   = 10
	demoEvery      = 500 * time.Millisecond // a new order this often
	demoBacklog    = 25                     // orders already there at start
	demoThrottleN  = 5                      // every 5th request answers 429
	demoInvalidN   = 40                     // every 40th order breaks its contract
	demoType       = "examples.shop.v1.OrderPlaced"
	demoPollerName = "demo-shop"
)

// server is the partner API; the package documentation says what it
// serves.
type server struct {
	srv   *http.Server
	ln    net.Listener
	start time.Time
	done  chan struct{}

	mu       sync.Mutex
	requests int
}

// Start listens on 127.0.0.1 (any free port) and serves until stop is
// called or ctx ends; stop waits for the server to finish.
func Start(ctx context.Context) (baseURL string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("devpartner: %w", err)
	}
	d := &server{ln: ln, start: time.Now(), done: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /orders", d.orders)
	d.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(d.done)
		_ = d.srv.Serve(ln) // ends with http.ErrServerClosed at stop
	}()
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		_ = d.srv.Shutdown(sctx)
		<-d.done
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-stopped
		})
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// Config is the poller of the partner at baseURL, under its own source,
// its name ("demo-shop"): not the push source "demo" of sluice dev, whose
// (source, id) space its orders would share.
func Config(baseURL string) pull.Config {
	c := pull.NewDefaultConfig()
	c.Name = demoPollerName
	c.URL = baseURL + "/orders?cursor={cursor}"
	c.Interval = 2 * time.Second
	c.RequestTimeout = 5 * time.Second
	c.Pagination = pull.PaginationConfig{Type: pull.PaginateCursor, Cursor: "/next_cursor", StartPage: 1}
	c.Items = "/orders"
	c.Mapping = pull.MappingConfig{
		ID:           eventmap.Pointer("/order/order_id"),
		Type:         eventmap.FixedType(demoType),
		OccurredAt:   eventmap.Pointer("/placed_at"),
		PartitionKey: eventmap.Pointer("/order/customer/customer_id"),
		Payload:      "/order",
	}
	c.RateLimit = pull.RateLimitConfig{Rate: 20, Burst: 5}
	c.MaxRetryAfter = 10 * time.Second
	c.Backoff = backoff.Config{Initial: 200 * time.Millisecond, Max: 5 * time.Second}
	c.Breaker = pull.BreakerConfig{Failures: 5, Cooldown: 5 * time.Second}
	return c
}

type demoItem struct {
	PlacedAt string         `json:"placed_at"`
	Order    map[string]any `json:"order"`
}

func (d *server) orders(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	d.requests++
	n := d.requests
	d.mu.Unlock()
	if n%demoThrottleN == 0 {
		w.Header().Set("Retry-After", "1")
		http.Error(w, `{"error":"slow down"}`, http.StatusTooManyRequests)
		return
	}
	from := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		v, err := strconv.Atoi(c)
		if err != nil || v < 0 {
			http.Error(w, `{"error":"bad cursor"}`, http.StatusBadRequest)
			return
		}
		from = v
	}
	now := time.Now()
	available := demoBacklog + int(now.Sub(d.start)/demoEvery)
	to := max(min(from+demoPageSize, available), from)
	items := make([]demoItem, 0, to-from)
	for seq := from; seq < to; seq++ {
		items = append(items, demoOrder(seq, d.start.Add(time.Duration(seq-demoBacklog)*demoEvery)))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"orders": items, "next_cursor": strconv.Itoa(to)})
}

// demoOrder is order seq, shaped like examples/events/order_placed.json.
func demoOrder(seq int, at time.Time) demoItem {
	qty := 1 + seq%3
	currency := "EUR"
	if seq%demoInvalidN == demoInvalidN-1 {
		currency = "eur" // breaks the contract's ^[A-Z]{3}$
	}
	return demoItem{
		PlacedAt: at.UTC().Format(time.RFC3339Nano),
		Order: map[string]any{
			"order_id": fmt.Sprintf("7c9e6679-7425-40de-944b-%012x", seq),
			"customer": map[string]any{"customer_id": fmt.Sprintf("cust-%d", 1000+seq%17), "email": fmt.Sprintf("buyer%d@example.com", seq%17)},
			"items": []map[string]any{
				{"sku": "BOOK-0451", "quantity": qty, "unit_price_cents": 1999},
				{"sku": "MUG-0007", "quantity": 1, "unit_price_cents": 1250},
			},
			"currency":         currency,
			"total_cents":      qty*1999 + 1250,
			"shipping_address": map[string]any{"line1": "12 Harbour Lane", "city": "Lisbon", "postal_code": "1100-148", "country_code": "PT"},
			"payment_method":   "PAYMENT_METHOD_CARD",
		},
	}
}
