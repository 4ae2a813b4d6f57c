package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// TestStopDrainsTheSpool: a gateway that spooled events while Kafka
// refused them is sent SIGTERM the moment Kafka is back. It takes no
// more requests, drains its spool into Kafka (admission.shutdown_drain)
// and exits: nothing is left on its disk and every event it acknowledged
// is in Kafka.
func TestStopDrainsTheSpool(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a gateway process")
	}
	var topics []string
	for _, typ := range examples.Types {
		topics = append(topics, record.EventTopic(typ))
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topics...))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	var outage atomic.Bool
	outage.Store(true)
	cluster.ControlKey(kmsg.Produce.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		if outage.Load() {
			return nil, errors.New("injected outage"), true
		}
		return nil, nil, false
	})
	dir := t.TempDir()
	// A drainer that backs off for up to 2s between failed attempts: at
	// the stop it is most likely waiting, with the whole spool unsent.
	c := startChild(t, dir, strings.Join(cluster.ListenAddrs(), ","), true, 0,
		"drain_backoff_max: 2s", "shutdown_drain: 20s")

	l := &ledger{ids: map[string]string{}, at: map[kafkaPosition]string{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() { load(c.http, w, 0, l, stop) })
	}
	spooled := func() int {
		resp, err := http.Get("http://" + c.admin + "/metrics")
		if err != nil {
			return -1
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`(?m)^sluice_spool_records (\d+)$`).FindSubmatch(body)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if !waitUntil(30*time.Second, func() bool { return spooled() >= 500 }) {
		t.Fatalf("the gateway spooled %d records in 30s", spooled())
	}
	close(stop)
	wg.Wait()
	held := spooled()

	outage.Store(false)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := c.wait(); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	rep, err := buffer.Inspect(filepath.Join(dir, "spool"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spooled %d records before SIGTERM; %d left on disk after the exit", held, rep.PendingRecords)
	if rep.PendingRecords != 0 {
		t.Fatalf("the stopped gateway left %d of its %d spooled records on disk", rep.PendingRecords, held)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topics...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := map[string]bool{}
	for len(in) < len(l.ids) && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			for _, h := range r.Headers {
				if h.Key == record.HeaderEventID {
					in[string(h.Value)] = true
				}
			}
		})
	}
	for id := range l.ids {
		if !in[id] {
			t.Fatalf("%s was acknowledged and is not in Kafka (%d of %d are)", id, len(in), len(l.ids))
		}
	}
}
