package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// MissingTopicsError is the cluster's answer that topics the producer
// writes do not exist: UNKNOWN_TOPIC_OR_PARTITION for each. Records for
// them are not acknowledged until an operator creates them.
type MissingTopicsError struct {
	// Topics are the missing topics, sorted.
	Topics []string
}

func (e *MissingTopicsError) Error() string {
	return fmt.Sprintf("publish: %s: the cluster has no topic %s (create it: records for it are not acknowledged until then)",
		kerr.UnknownTopicOrPartition.Message, strings.Join(e.Topics, ", "))
}

// Unwrap is kerr.UnknownTopicOrPartition.
func (e *MissingTopicsError) Unwrap() error { return kerr.UnknownTopicOrPartition }

// topicWatch is what CheckTopics keeps between checks: the cluster's last
// answer about each topic of WithTopics.
type topicWatch struct {
	topics []string // sorted, without duplicates

	mu      sync.Mutex
	checked bool            // the cluster has answered at least once
	missing map[string]bool // as of the last answer
}

// CheckTopics asks the cluster whether every topic of WithTopics exists,
// with one metadata request bounded by ctx. The request never creates a
// topic: it does not allow auto-creation, so a broker with
// auto.create.topics.enable answers for a missing topic as any other does.
// Without topics it asks for none, like Ping.
//
// It returns nil when the cluster answered and every topic exists, and a
// *MissingTopicsError naming the missing ones when it said
// UNKNOWN_TOPIC_OR_PARTITION for some. When no broker answered within
// ctx it returns that error, joined with the last answer's
// *MissingTopicsError if there was one: a topic stays missing until the
// cluster says otherwise.
//
// Each answer sets sluice_kafka_topic_missing{topic}. A topic found
// missing is logged at ERROR, naming UNKNOWN_TOPIC_OR_PARTITION and the
// topic, when it is found so and not at every check after; one found again
// is logged at INFO. It is safe for concurrent use; checks that overlap
// may be applied in either order, and the next check settles it.
func (p *Producer) CheckTopics(ctx context.Context) error {
	if err := p.checkOpen(); err != nil {
		return err
	}
	w := &p.topics
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	req.Topics = make([]kmsg.MetadataRequestTopic, 0, len(w.topics)) // empty, not nil: nil asks for every topic
	for _, topic := range w.topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := p.metadata(ctx, req)
	if err != nil {
		err = fmt.Errorf("publish: topic metadata: %w", err)
		if last := w.lastMissing(); last != nil {
			return errors.Join(err, last)
		}
		return err
	}
	exists := make(map[string]bool, len(resp.Topics))
	for _, rt := range resp.Topics {
		// Any other error (a leader being elected, no right to describe
		// it) says the topic exists, or is not this check's to judge:
		// produce errors say the rest.
		if rt.Topic != nil && rt.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			exists[*rt.Topic] = true
		}
	}
	return w.answered(exists, p)
}

// metadata sends req to the brokers the client knows, then to the seeds,
// until one answers, as kgo.Client.Ping does: a broker that is down fails
// at once rather than being retried until ctx ends, and the client's own
// metadata is left alone.
func (p *Producer) metadata(ctx context.Context, req *kmsg.MetadataRequest) (*kmsg.MetadataResponse, error) {
	err := errors.New("no broker known")
	for _, brokers := range [...][]*kgo.Broker{p.client.DiscoveredBrokers(), p.client.SeedBrokers()} {
		for _, b := range brokers {
			var resp *kmsg.MetadataResponse
			if resp, err = req.RequestWith(ctx, b); err == nil {
				return resp, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
		}
	}
	return nil, err
}

// answered records the cluster's answer and returns what CheckTopics
// returns for it.
func (w *topicWatch) answered(exists map[string]bool, p *Producer) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var missing []string
	for _, topic := range w.topics {
		was, first := w.missing[topic], !w.checked
		switch now := !exists[topic]; {
		case now && (first || !was):
			p.log.Error("publish: topic missing in the cluster; records for it are not acknowledged until it is created",
				"topic", topic, "err", kerr.UnknownTopicOrPartition)
		case !now && was:
			p.log.Info("publish: topic found in the cluster", "topic", topic)
		}
		w.missing[topic] = !exists[topic]
		if w.missing[topic] {
			missing = append(missing, topic)
			p.metrics.topicMissing.WithLabelValues(topic).Set(1)
		} else {
			p.metrics.topicMissing.WithLabelValues(topic).Set(0)
		}
	}
	w.checked = true
	if len(missing) == 0 {
		return nil
	}
	return &MissingTopicsError{Topics: missing}
}

// lastMissing is the last answer's *MissingTopicsError, or nil.
func (w *topicWatch) lastMissing() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var missing []string
	for _, topic := range w.topics {
		if w.missing[topic] {
			missing = append(missing, topic)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return &MissingTopicsError{Topics: missing}
}

func newTopicWatch(topics []string) topicWatch {
	sorted := slices.Compact(slices.Sorted(slices.Values(topics)))
	return topicWatch{topics: sorted, missing: make(map[string]bool, len(sorted))}
}
