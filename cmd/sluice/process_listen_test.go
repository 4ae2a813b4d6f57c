package main

import (
	"net"
	"testing"
	"time"
)

// TestStartListeningPicksOtherPortsWhenOneIsTaken: a command whose port
// was taken between freePort's pick and its bind is started again with
// another port, and the test goes on; the first attempt's end is not
// counted against it.
func TestStartListeningPicksOtherPortsWhenOneIsTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var addrs []string
	startListening(t, time.Minute, "kfake to listen", func() ([]string, func() bool) {
		addr := freePort(t)
		if len(addrs) == 0 {
			addr = taken.Addr().String() // as if another test took it first
		}
		addrs = append(addrs, addr)
		return []string{"kfake", "--addr", addr}, func() bool {
			if addr == taken.Addr().String() {
				return false // the taken port answers, but not as kfake
			}
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return false
			}
			c.Close()
			return true
		}
	})
	if len(addrs) != 2 {
		t.Fatalf("started on %v, want the taken port, then one other", addrs)
	}
}
