package tlsfiles_test

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"syscall"
	"testing"

	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tlsfiles/tlstest"
)

// BenchmarkHandshake is what a new connection costs on a listener: a TCP
// connection accepted and closed (tcp), and the same with a full TLS
// handshake against a Reloader's config, server-only (tls) and with a
// client certificate the server verifies (mtls). Client and server run in
// this process, so each op is both sides' CPU; there is no session
// resumption (every connection is new). cpu-ns/op is the process's CPU
// time (user and system, both sides) per connection.
func BenchmarkHandshake(b *testing.B) {
	f := newFiles(b)
	client := f.clientCA.Client(b, tlstest.Identity{CommonName: "bench"}).TLS(b)
	for _, c := range []struct {
		name string
		auth tlsfiles.ClientAuth
		tls  bool
	}{{"tcp", tlsfiles.ClientAuthNone, false}, {"tls", tlsfiles.ClientAuthNone, true}, {"mtls", tlsfiles.ClientAuthRequire, true}} {
		b.Run(c.name, func(b *testing.B) {
			r, err := tlsfiles.NewReloader(f.config(c.auth), "bench", tlsfiles.WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				b.Fatal(err)
			}
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer lis.Close()
			served := make(chan error, 1)
			go func() { // owned here: it ends when lis is closed
				for {
					conn, err := lis.Accept()
					if err != nil {
						served <- nil
						return
					}
					if c.tls {
						tc := tls.Server(conn, r.Config())
						if err := tc.Handshake(); err != nil {
							served <- err
							conn.Close()
							return
						}
						conn = tc
					}
					// One byte proves the handshake finished on both sides.
					_, _ = conn.Write([]byte{1})
					conn.Close()
				}
			}()
			cc := &tls.Config{RootCAs: f.serverCA.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{client}}
			buf := make([]byte, 1)
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				conn, err := net.Dial("tcp", lis.Addr().String())
				if err != nil {
					b.Fatal(err)
				}
				if c.tls {
					conn = tls.Client(conn, cc)
				}
				if _, err := io.ReadFull(conn, buf); err != nil {
					b.Fatal(err)
				}
				conn.Close()
			}
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			lis.Close()
			if err := <-served; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// processCPU is the process's user and system CPU time so far, in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
