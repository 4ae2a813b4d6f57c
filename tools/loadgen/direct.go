package loadgen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// directSource is the sluice-source header of records direct produces.
const directSource = "loadgen-direct"

// directTarget produces the records the gateway would make for the same
// events (record.NewEvent: same key, value, headers) straight to Kafka,
// with the gateway's producer settings (publish.NewDefaultConfig): the
// floor of what an event costs to get into Kafka. It decodes and validates
// nothing.
type directTarget struct {
	client      *kgo.Client
	gen         *Generator
	topic       string
	fingerprint string
}

func newDirectTarget(cfg Config, gen *Generator) (*directTarget, error) {
	if gen == nil {
		return nil, errors.New("loadgen: direct needs the run's generator")
	}
	registry, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		return nil, err
	}
	c, ok := registry.Lookup(cfg.EventType)
	if !ok {
		return nil, fieldErr("type", "no example contract "+cfg.EventType)
	}
	pc := publish.NewDefaultConfig()
	kc := cfg.Kafka
	if len(kc.Brokers) == 0 {
		for _, b := range strings.Split(cfg.Addr, ",") {
			if b = strings.TrimSpace(b); b != "" {
				kc.Brokers = append(kc.Brokers, b)
			}
		}
	}
	if kc.ClientID == "" {
		kc.ClientID = "sluice-loadgen"
	}
	if kc.DialTimeout == 0 {
		kc.DialTimeout = pc.DialTimeout
	}
	conn, err := kc.Options(slog.Default())
	if err != nil {
		return nil, fmt.Errorf("loadgen: direct: %w", err)
	}
	client, err := kgo.NewClient(append(conn,
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(pc.DeliveryTimeout),
		kgo.ProducerLinger(pc.Linger),
		kgo.MaxBufferedRecords(pc.MaxBufferedRecords),
		kgo.MaxBufferedBytes(int(pc.MaxBufferedBytes)),
		kgo.ProducerBatchMaxBytes(pc.BatchMaxBytes),
		kgo.ProducerBatchCompression(kgo.Lz4Compression(), kgo.NoCompression()),
	)...)
	if err != nil {
		return nil, fmt.Errorf("loadgen: kafka client: %w", err)
	}
	topic := cfg.Topic
	if topic == "" {
		topic = record.EventTopic(cfg.EventType)
	}
	return &directTarget{client: client, gen: gen, topic: topic, fingerprint: c.Fingerprint()}, nil
}

// NewSender shares the target's client: franz-go batches across senders.
func (t *directTarget) NewSender() (Sender, error) { return sharedSender{t.send}, nil }

func (t *directTarget) Close() error {
	t.client.Close()
	return nil
}

// send produces one record per event and waits for every ack. A record
// Kafka refused is REJECTED with reason PRODUCE_ERROR; when ctx ends first
// the request got no answer.
func (t *directTarget) send(ctx context.Context, events []*ingestv1.Event) (Answer, error) {
	now := time.Now()
	records := make([]*kgo.Record, len(events))
	for i, ev := range events {
		records[i] = record.NewEvent(&record.Event{
			Topic:       t.topic,
			Key:         []byte(ev.GetPartitionKey()),
			Value:       t.gen.binaryOf(ev),
			ID:          ev.GetId(),
			Type:        ev.GetType(),
			Source:      directSource,
			OccurredAt:  ev.GetOccurredAt().AsTime(),
			IngestedAt:  now,
			Fingerprint: t.fingerprint,
		})
	}
	// Produce with promises, not ProduceSync: ProduceSync cuts the linger
	// short, and the gateway's producer does not.
	errs := make([]error, len(records))
	var wg sync.WaitGroup
	wg.Add(len(records))
	for i, r := range records {
		t.client.Produce(ctx, r, func(_ *kgo.Record, err error) {
			errs[i] = err
			wg.Done()
		})
	}
	wg.Wait()
	out := make([]EventResult, len(events))
	for i, err := range errs {
		if err != nil && ctx.Err() != nil {
			return Answer{}, ctx.Err()
		}
		out[i] = EventResult{ID: events[i].GetId(), Outcome: ingestv1.Outcome_ACCEPTED}
		if err != nil {
			out[i] = EventResult{ID: events[i].GetId(), Outcome: ingestv1.Outcome_REJECTED, Reason: "PRODUCE_ERROR", Message: err.Error()}
		}
	}
	return Answer{Results: out}, nil
}
