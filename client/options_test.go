package client_test

import (
	"crypto/tls"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/client"
)

// TestNewValidates: New names the option that is wrong.
func TestNewValidates(t *testing.T) {
	local := []string{"127.0.0.1:1"}
	for _, tc := range []struct {
		name  string
		addrs []string
		opts  []client.Opt
		want  string // in the error; "" for none
	}{
		{"loopback plaintext", local, []client.Opt{client.WithInsecure()}, ""},
		{"localhost", []string{"localhost:1", "[::1]:1", "dns:///127.0.0.2:1", "unix:///tmp/s"}, []client.Opt{client.WithInsecure()}, ""},
		{"TLS anywhere", []string{"ingest.example.com:443"}, []client.Opt{client.WithTLS(&tls.Config{})}, ""},
		{"no address", nil, []client.Opt{client.WithInsecure()}, "no address"},
		{"empty address", []string{" "}, []client.Opt{client.WithInsecure()}, "empty"},
		{"no transport", local, nil, "WithTLS"},
		{"both transports", local, []client.Opt{client.WithInsecure(), client.WithTLS(&tls.Config{})}, "WithInsecure"},
		{"plaintext off loopback", []string{"127.0.0.1:1", "10.0.0.1:443"}, []client.Opt{client.WithInsecure()}, "WithInsecure"},
		{"plaintext to a name", []string{"ingest.example.com:443"}, []client.Opt{client.WithInsecure()}, "WithInsecure"},
		{"batch events", local, []client.Opt{client.WithInsecure(), client.MaxBatchEvents(0)}, "MaxBatchEvents"},
		{"batch bytes", local, []client.Opt{client.WithInsecure(), client.MaxBatchBytes(0)}, "MaxBatchBytes"},
		{"linger", local, []client.Opt{client.WithInsecure(), client.Linger(-time.Millisecond)}, "Linger"},
		{"buffer under a batch", local, []client.Opt{client.WithInsecure(), client.MaxBufferedEvents(10)}, "MaxBufferedEvents"},
		{"buffer bytes under a batch", local, []client.Opt{client.WithInsecure(), client.MaxBufferedBytes(1 << 20)}, "MaxBufferedBytes"},
		{"in flight", local, []client.Opt{client.WithInsecure(), client.MaxInFlight(0)}, "MaxInFlight"},
		{"request timeout", local, []client.Opt{client.WithInsecure(), client.RequestTimeout(0)}, "RequestTimeout"},
		{"event timeout", local, []client.Opt{client.WithInsecure(), client.EventTimeout(0)}, "EventTimeout"},
		{"attempts", local, []client.Opt{client.WithInsecure(), client.MaxAttempts(0)}, "MaxAttempts"},
		{"backoff", local, []client.Opt{client.WithInsecure(), client.Backoff(time.Second, time.Millisecond)}, "Backoff"},
		{"nil ids", local, []client.Opt{client.WithInsecure(), client.WithIDs(nil)}, "WithIDs"},
		{"nil metrics", local, []client.Opt{client.WithInsecure(), client.WithMetrics(nil)}, "WithMetrics"},
		{"nil logger", local, []client.Opt{client.WithInsecure(), client.WithLogger(nil)}, "WithLogger"},
		{"nil clock", local, []client.Opt{client.WithInsecure(), client.WithClock(nil)}, "WithClock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := client.New(tc.addrs, tc.opts...)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := c.Close(t.Context()); err != nil {
					t.Error(err)
				}
				return
			}
			if err == nil {
				_ = c.Close(t.Context())
				t.Fatalf("New took it, want an error naming %s", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v, want it to name %s", err, tc.want)
			}
		})
	}
}
