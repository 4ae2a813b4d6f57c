package consumer

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/publish"
)

func deadLetterFor(t *testing.T, source, typ, class string, partition int32, offset int64, failedAt time.Time) DeadLetter {
	t.Helper()
	r := publish.NewRecord(&publish.Event{Topic: testTopic, ID: "id", Type: typ, Source: source,
		OccurredAt: failedAt, IngestedAt: failedAt, Fingerprint: "f"})
	env := Envelope{Class: class, Error: "x", Sink: "mem", FirstFailureAt: failedAt, LastFailureAt: failedAt,
		SourceTopic: testTopic, Group: "g"}
	rec := envelopeRecord(DLQTopic(testTopic), r, &env)
	rec.Partition, rec.Offset = partition, offset
	return readDeadLetter(rec)
}

func TestSelectionMatch(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	d := deadLetterFor(t, "checkout", testType, "transient", 2, 40, t0)
	garbled := DeadLetter{Record: &kgo.Record{Partition: 2, Offset: 40}}
	garbled.Envelope, garbled.EnvelopeErr = ParseEnvelope(garbled.Record)
	garbled.Event, garbled.EventErr = publish.ParseHeaders(garbled.Record)
	tests := []struct {
		name        string
		sel         Selection
		want        bool
		wantGarbled bool
	}{
		{"everything", Selection{}, true, true},
		{"from before", Selection{From: t0}, true, false},
		{"from after", Selection{From: t0.Add(time.Nanosecond)}, false, false},
		{"to is exclusive", Selection{To: t0}, false, false},
		{"to after", Selection{To: t0.Add(time.Second)}, true, false},
		{"source", Selection{Source: "checkout"}, true, false},
		{"other source", Selection{Source: "billing"}, false, false},
		{"type", Selection{Type: testType}, true, false},
		{"other type", Selection{Type: "examples.shop.v1.OrderPlaced"}, false, false},
		{"class", Selection{Class: "transient"}, true, false},
		{"other class", Selection{Class: "permanent"}, false, false},
		{"partition", Selection{Partitions: []int32{1, 2}}, true, true},
		{"other partition", Selection{Partitions: []int32{0}}, false, false},
		{"offset range", Selection{FromOffset: 40, ToOffset: 41}, true, true},
		{"offset below", Selection{FromOffset: 41}, false, false},
		{"offset to is exclusive", Selection{ToOffset: 40}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.sel.Match(&d); got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
			if got := tt.sel.Match(&garbled); got != tt.wantGarbled {
				t.Fatalf("Match(garbled) = %v, want %v", got, tt.wantGarbled)
			}
		})
	}
}

// TestReplay: list, dry run and replay of a DLQ against kfake, with the
// audit records they leave.
func TestReplay(t *testing.T) {
	addrs := newCluster(t, 1)
	seedDLQ(t, addrs, "replay", 12, []string{"e00001", "e00006"}, []string{"e00009"}, nil)
	kopts := []kgo.Opt{kgo.SeedBrokers(addrs...)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var listed []string
	err := List(ctx, kopts, DLQTopic(testTopic), Selection{Class: "transient"}, func(d DeadLetter) error {
		listed = append(listed, d.Event.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if strings.Join(listed, ",") != "e00001,e00006" {
		t.Fatalf("listed %v", listed)
	}

	sourceEnd := len(readAll(t, addrs, testTopic))
	var progress bytes.Buffer
	dry, err := Replay(ctx, kopts, DLQTopic(testTopic), Selection{Class: "permanent"},
		ReplayOptions{DryRun: true, Rate: 1000, Actor: "alice", Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Scanned != 3 || dry.Matched != 1 || dry.Replayed != 1 || !dry.DryRun || dry.Outcome != "ok" {
		t.Fatalf("dry run report %+v", dry)
	}
	if n := len(readAll(t, addrs, testTopic)); n != sourceEnd {
		t.Fatalf("dry run produced %d records", n-sourceEnd)
	}
	if !strings.Contains(progress.String(), "would replay 1") {
		t.Fatalf("progress %q", progress.String())
	}

	rep, err := Replay(ctx, kopts, DLQTopic(testTopic), Selection{Class: "transient"},
		ReplayOptions{Rate: 1000, Actor: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Matched != 2 || rep.Replayed != 2 || rep.DryRun {
		t.Fatalf("replay report %+v", rep)
	}
	src := readAll(t, addrs, testTopic)
	if len(src) != sourceEnd+2 {
		t.Fatalf("source topic grew by %d, want 2", len(src)-sourceEnd)
	}
	var replayed []string
	for _, r := range src[sourceEnd:] {
		h, err := publish.ParseHeaders(r)
		if err != nil {
			t.Fatal(err)
		}
		replayed = append(replayed, h.ID)
		for _, hh := range r.Headers {
			if strings.HasPrefix(hh.Key, EnvelopePrefix) {
				t.Fatalf("replayed record keeps envelope header %s", hh.Key)
			}
		}
	}
	if slices.Sort(replayed); strings.Join(replayed, ",") != "e00001,e00006" {
		t.Fatalf("replayed %v", replayed)
	}

	audit := readAll(t, addrs, AuditTopic)
	if len(audit) != 2 {
		t.Fatalf("%d audit records, want 2", len(audit))
	}
	var a ReplayReport
	if err := json.Unmarshal(audit[1].Value, &a); err != nil {
		t.Fatal(err)
	}
	if a.Actor != "bob" || a.Selection.Class != "transient" || a.Replayed != 2 || a.Outcome != "ok" || a.StartedAt.IsZero() {
		t.Fatalf("audit record %+v", a)
	}
	if err := json.Unmarshal(audit[0].Value, &a); err != nil || a.Actor != "alice" || !a.DryRun {
		t.Fatalf("dry-run audit record %+v, %v", a, err)
	}

	if _, err := Replay(ctx, kopts, DLQTopic(testTopic), Selection{}, ReplayOptions{Rate: 1}); err != ErrNoActor {
		t.Fatalf("replay without actor: %v", err)
	}
}

// TestReplayNeedsAuditTopic: without the audit topic nothing is replayed.
func TestReplayNeedsAuditTopic(t *testing.T) {
	cl, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, testTopic, DLQTopic(testTopic)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	addrs := cl.ListenAddrs()
	env := Envelope{Class: "transient", SourceTopic: testTopic, Retryable: true, Group: "g", Sink: "mem"}
	produce(t, addrs, envelopeRecord(DLQTopic(testTopic), eventRecord(t, testTopic, "a", "k", logLine(t)), &env))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rep, err := Replay(ctx, []kgo.Opt{kgo.SeedBrokers(addrs...)}, DLQTopic(testTopic), Selection{}, ReplayOptions{Rate: 100, Actor: "a"})
	if err == nil || !strings.Contains(err.Error(), AuditTopic) || rep.Replayed != 0 {
		t.Fatalf("replay without audit topic: %+v, %v", rep, err)
	}
	if n := len(readAll(t, addrs, testTopic)); n != 0 {
		t.Fatalf("%d records replayed", n)
	}
}
