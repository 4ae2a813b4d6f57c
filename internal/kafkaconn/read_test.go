package kafkaconn_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/internal/kafkatest"
)

// readCluster is a kfake cluster whose topic "t" holds records v0..v4 in
// partition 0 and w0..w2 in partition 1.
func readCluster(t *testing.T) []string {
	t.Helper()
	c := kafkatest.Fake(t, 2, []string{"t"})
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 5 {
		recs = append(recs, &kgo.Record{Topic: "t", Partition: 0, Value: fmt.Appendf(nil, "v%d", i)})
	}
	for i := range 3 {
		recs = append(recs, &kgo.Record{Topic: "t", Partition: 1, Value: fmt.Appendf(nil, "w%d", i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return c.ListenAddrs()
}

func read(t *testing.T, brokers []string, ctx context.Context, spans []kafkaconn.Span, fn func(*kgo.Record) (bool, error)) ([]string, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	err = kafkaconn.Read(ctx, cl, spans, 0, func(r *kgo.Record) (bool, error) {
		got = append(got, fmt.Sprintf("%d@%d:%s", r.Partition, r.Offset, r.Value))
		if fn != nil {
			return fn(r)
		}
		return false, nil
	})
	return got, err
}

// TestRead: each span is read from From to End, once, in offset order per
// partition; an empty span is not read; fn's stop and error end the read.
func TestRead(t *testing.T) {
	brokers := readCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	got, err := read(t, brokers, ctx, []kafkaconn.Span{{Topic: "t", Partition: 0, From: 1, End: 4}, {Topic: "t", Partition: 1, From: 2, End: 2}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"0@1:v1", "0@2:v2", "0@3:v3"}; !slices.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}

	got, err = read(t, brokers, ctx, []kafkaconn.Span{{Topic: "t", Partition: 0, From: 0, End: 5}, {Topic: "t", Partition: 1, From: 0, End: 3}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var p0, p1 []string
	for _, g := range got {
		if g[0] == '0' {
			p0 = append(p0, g)
		} else {
			p1 = append(p1, g)
		}
	}
	if want := []string{"0@0:v0", "0@1:v1", "0@2:v2", "0@3:v3", "0@4:v4"}; !slices.Equal(p0, want) {
		t.Errorf("partition 0: read %v, want %v", p0, want)
	}
	if want := []string{"1@0:w0", "1@1:w1", "1@2:w2"}; !slices.Equal(p1, want) {
		t.Errorf("partition 1: read %v, want %v", p1, want)
	}

	got, err = read(t, brokers, ctx, []kafkaconn.Span{{Topic: "t", Partition: 0, From: 0, End: 5}},
		func(r *kgo.Record) (bool, error) { return r.Offset == 1, nil })
	if err != nil || !slices.Equal(got, []string{"0@0:v0", "0@1:v1"}) {
		t.Errorf("stop at offset 1: read %v, %v", got, err)
	}

	boom := errors.New("boom")
	got, err = read(t, brokers, ctx, []kafkaconn.Span{{Topic: "t", Partition: 0, From: 2, End: 5}},
		func(*kgo.Record) (bool, error) { return false, boom })
	if !errors.Is(err, boom) || len(got) != 1 {
		t.Errorf("fn failing: read %v, %v, want one record and fn's error", got, err)
	}

	got, err = read(t, brokers, ctx, nil, nil)
	if err != nil || len(got) != 0 {
		t.Errorf("no spans: read %v, %v", got, err)
	}
}

// TestReadEnds: a read of a span whose End is not yet written ends with
// ctx's error, or with nil once nothing arrives for the idle wait.
func TestReadEnds(t *testing.T) {
	brokers := readCluster(t)
	span := []kafkaconn.Span{{Topic: "t", Partition: 1, From: 0, End: 10}}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, err := read(t, brokers, ctx, span, nil)
	if !errors.Is(err, context.DeadlineExceeded) || len(got) != 3 {
		t.Errorf("ctx ending: read %v, %v, want 3 records and ctx's error", got, err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	err = kafkaconn.Read(ctx, cl, span, 500*time.Millisecond, func(*kgo.Record) (bool, error) { n++; return false, nil })
	if err != nil || n != 3 || ctx.Err() != nil {
		t.Errorf("idle: read %d records, %v, want 3 and nil before ctx ends", n, err)
	}
}
