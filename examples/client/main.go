// Command client publishes orders to a sluice gateway through the official
// Go client (package client), and prints what became of each:
//
//	go run ./examples/client -addr 127.0.0.1:9090 -key sluice-demo-key
//
// First three orders, one with an email the contract refuses: the two
// good ones are ACCEPTED, the bad one comes back as a *client.RejectionError
// with its violations and is never sent again. Then a burst larger than the
// source's rate limit allows at once: the gateway answers RATE_LIMITED with
// a retry_after, and the client sends those events again after it, under
// the same ids, until every one is ACCEPTED.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sluicehq/sluice/client"
	shopv1 "github.com/sluicehq/sluice/gen/examples/shop/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9090", "the gateway's gRPC address")
	key := flag.String("key", "sluice-demo-key", "the source's API key")
	burst := flag.Int("burst", 30000, "orders in the burst (sluice dev's demo source takes 10000 at once, then 5000/s)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, *addr, *key, *burst, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, key string, burst int, out io.Writer) error {
	retries := &retryCount{by: map[ingestv1.Reason]int{}}
	// WithInsecure: sluice dev listens on loopback without TLS. Against a
	// gateway elsewhere, use client.WithTLS.
	c, err := client.New([]string{addr}, client.WithAPIKey(key), client.WithInsecure(), client.WithMetrics(retries))
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(closeCtx); err != nil {
			fmt.Fprintln(out, "close:", err)
		}
	}()

	// No ids: the client gives each event one when it takes it, and keeps
	// it for every retry.
	results, err := c.Publish(ctx, order("ada@example.com"), order("not-an-email"), order("grace@example.com"))
	if err != nil {
		return err
	}
	for _, r := range results {
		var rej *client.RejectionError
		switch {
		case r.Err == nil:
			fmt.Fprintf(out, "%s  %s  %s  %s[%d]@%d\n", r.ID, r.Outcome, r.Durability, r.Kafka.GetTopic(), r.Kafka.GetPartition(), r.Kafka.GetOffset())
		case errors.As(r.Err, &rej):
			fmt.Fprintf(out, "%s  REJECTED  %s, attempts %d:\n", r.ID, rej.Reason, r.Attempts)
			for _, v := range rej.Violations {
				fmt.Fprintf(out, "    %s (%s): %s\n", v.GetField(), v.GetRule(), v.GetMessage())
			}
		default:
			fmt.Fprintf(out, "%s  not delivered: %v\n", r.ID, r.Err)
		}
	}

	events := make([]*ingestv1.Event, burst)
	for i := range events {
		events[i] = order(fmt.Sprintf("buyer-%d@example.com", i))
	}
	start := time.Now()
	results, err = c.Publish(ctx, events...)
	if err != nil {
		return err
	}
	outcomes := map[string]int{}
	most := 0
	for _, r := range results {
		switch {
		case r.Err == nil:
			outcomes[r.Outcome.String()]++
		default:
			outcomes["failed: "+r.Err.Error()]++
		}
		most = max(most, r.Attempts)
	}
	fmt.Fprintf(out, "burst of %d orders in %.1fs: %v; sent again after RATE_LIMITED: %d, most attempts for one order: %d\n",
		burst, time.Since(start).Seconds(), outcomes, retries.of(ingestv1.Reason_RATE_LIMITED), most)
	return nil
}

// order is an examples.shop.v1.OrderPlaced for the buyer at email, in
// protobuf binary: an event without an id or occurred_at, which the
// client fills in.
func order(email string) *ingestv1.Event {
	payload, err := proto.Marshal(&shopv1.OrderPlaced{
		OrderId:         orderID(),
		Customer:        &shopv1.Customer{CustomerId: "cust-1042", Email: email},
		Items:           []*shopv1.LineItem{{Sku: "BOOK-0451", Quantity: 1, UnitPriceCents: 1999}},
		Currency:        "EUR",
		TotalCents:      1999,
		ShippingAddress: &shopv1.Address{Line1: "12 Harbour Lane", City: "Lisbon", PostalCode: "1100-148", CountryCode: "PT"},
		PaymentMethod:   shopv1.PaymentMethod_PAYMENT_METHOD_CARD,
	})
	if err != nil {
		panic(err) // a message of the generated type always marshals
	}
	return &ingestv1.Event{Type: "examples.shop.v1.OrderPlaced", PartitionKey: "cust-1042", Payload: &ingestv1.Event_Binary{Binary: payload}}
}

// orderID is a random UUID (version 4), as the contract's order_id is.
func orderID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// retryCount is a client.Metrics that counts the events sent again, by
// the reason the gateway gave.
type retryCount struct {
	mu sync.Mutex
	by map[ingestv1.Reason]int
}

func (m *retryCount) Retry(reason ingestv1.Reason, n int) {
	m.mu.Lock()
	m.by[reason] += n
	m.mu.Unlock()
}

func (m *retryCount) of(reason ingestv1.Reason) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.by[reason]
}

func (*retryCount) Request(int, time.Duration, error)                           {}
func (*retryCount) Final(ingestv1.Outcome, ingestv1.Reason, int, time.Duration) {}
func (*retryCount) Buffered(int, int)                                           {}
