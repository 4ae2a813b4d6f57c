package faultsuite

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	logsv1 "github.com/sluicehq/sluice/gen/examples/logs/v1"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/kafkatest"
)

// TestIntegrationThirdPartyReader: records the gateway writes are read by
// kcat (librdkafka, not franz-go), and their key, value and headers are
// what the contract and docs/architecture.md's "Kafka records" say.
func TestIntegrationThirdPartyReader(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it from Debian's packages)")
	}
	s := newSystem(t, brokers, "")
	s.startGateway(64<<20, false)
	defer s.stop(s.gateway)

	conn, err := grpc.NewClient(s.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", apiKey, "traceparent", traceparent)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	want := map[string]*ingestv1.Event{}
	req := &ingestv1.PublishRequest{}
	for i := range 20 {
		ev := logEvent(fmt.Sprintf("%s-kcat-%d", s.run, i), i, false, i%2 == 1)
		ev.Attributes = map[string]string{"tenant": "t" + strconv.Itoa(i%3)}
		req.Events = append(req.Events, ev)
		want[ev.GetId()] = ev
	}
	resp, err := ingestv1.NewIngestServiceClient(conn).Publish(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.GetResults() {
		if r.GetOutcome() != ingestv1.Outcome_ACCEPTED {
			t.Fatalf("not accepted: %v", r)
		}
	}

	// Key and value are framed by their lengths, so binary values parse.
	// kcat -e stops at the end of each partition as it sees it; a
	// partition whose leader is still settling (the fault suite restarts
	// the broker just before) can end early, so a short read is read
	// again, until the deadline.
	var records []kcatRecord
	for attempt := 0; ; attempt++ {
		cmd := exec.CommandContext(ctx, kcat, "-C", "-b", strings.Join(brokers, ","), "-t", s.topic, "-o", "beginning", "-e", "-q",
			"-f", "%K %S %k%s%h\n")
		var out, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("kcat: %v\n%s", err, stderr.String())
		}
		records = parseKcat(t, out.Bytes())
		if len(records) >= len(want) || ctx.Err() != nil || attempt == 20 {
			break
		}
		t.Logf("kcat read %d of %d records; reading again", len(records), len(want))
		time.Sleep(500 * time.Millisecond)
	}
	if len(records) != len(want) {
		t.Fatalf("kcat read %d records, want %d", len(records), len(want))
	}
	for _, r := range records {
		id := r.headers["sluice-event-id"]
		ev, ok := want[id]
		if !ok {
			t.Fatalf("record with event id %q: not sent", id)
		}
		if string(r.key) != ev.GetPartitionKey() {
			t.Errorf("%s: key %q, want the partition key %q", id, r.key, ev.GetPartitionKey())
		}
		var got, sent logsv1.LogLine
		if err := proto.Unmarshal(r.value, &got); err != nil {
			t.Fatalf("%s: value is not a LogLine: %v", id, err)
		}
		if b := ev.GetBinary(); b != nil {
			if !bytes.Equal(r.value, b) {
				t.Errorf("%s: a binary payload must be published unchanged", id)
			}
			_ = proto.Unmarshal(b, &sent)
		} else {
			sent = *protoFromJSON(t, ev.GetJson())
		}
		if !proto.Equal(&got, &sent) {
			t.Errorf("%s: value %v, sent %v", id, &got, &sent)
		}
		for k, v := range map[string]string{
			"sluice-event-type":  eventType,
			"sluice-source":      "faults",
			"traceparent":        traceparent,
			"sluice-attr-tenant": ev.GetAttributes()["tenant"],
		} {
			if r.headers[k] != v {
				t.Errorf("%s: header %s = %q, want %q", id, k, r.headers[k], v)
			}
		}
		for _, k := range []string{"sluice-occurred-at", "sluice-ingested-at", "sluice-schema-fingerprint"} {
			if r.headers[k] == "" {
				t.Errorf("%s: header %s missing", id, k)
			}
		}
		if at, err := time.Parse(time.RFC3339Nano, r.headers["sluice-occurred-at"]); err != nil || !at.Equal(ev.GetOccurredAt().AsTime()) {
			t.Errorf("%s: sluice-occurred-at %q, want %v", id, r.headers["sluice-occurred-at"], ev.GetOccurredAt().AsTime())
		}
	}
}

type kcatRecord struct {
	key, value []byte
	headers    map[string]string
}

// parseKcat reads "%K %S %k%s%h\n" records: key length, value length, key,
// value, then comma-separated headers key=value (sluice's header values
// hold no commas or newlines).
func parseKcat(t *testing.T, b []byte) []kcatRecord {
	t.Helper()
	var out []kcatRecord
	for len(b) > 0 {
		var klen, vlen int
		sp1 := bytes.IndexByte(b, ' ')
		if sp1 < 0 {
			t.Fatalf("kcat output: %q", b)
		}
		klen, _ = strconv.Atoi(string(b[:sp1]))
		b = b[sp1+1:]
		sp2 := bytes.IndexByte(b, ' ')
		if sp2 < 0 {
			t.Fatalf("kcat output: %q", b)
		}
		vlen, _ = strconv.Atoi(string(b[:sp2]))
		b = b[sp2+1:]
		klen, vlen = max(klen, 0), max(vlen, 0)
		if len(b) < klen+vlen {
			t.Fatalf("kcat output ends inside a record")
		}
		r := kcatRecord{key: b[:klen], value: b[klen : klen+vlen], headers: map[string]string{}}
		b = b[klen+vlen:]
		nl := bytes.IndexByte(b, '\n')
		if nl < 0 {
			t.Fatalf("kcat output: headers without an end")
		}
		for _, h := range strings.Split(string(b[:nl]), ",") {
			if k, v, ok := strings.Cut(h, "="); ok {
				r.headers[k] = v
			}
		}
		b = b[nl+1:]
		out = append(out, r)
	}
	return out
}
