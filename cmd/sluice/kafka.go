package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/publish"
)

// kafkaCheckTimeout bounds the start-up check of the Kafka connection.
const kafkaCheckTimeout = 10 * time.Second

// checkKafka asks the cluster for metadata at start. Credentials or a
// certificate the cluster refuses stop start-up: no retry fixes them. A
// cluster that does not answer does not: the gateway spools (or refuses
// UNAVAILABLE) and the consumer waits until it is back.
func checkKafka(ctx context.Context, cl kafkaconn.Pinger, log *slog.Logger) error {
	_, err := askKafka(ctx, cl, log)
	return err
}

// askKafka is checkKafka, and says whether a broker answered.
func askKafka(ctx context.Context, cl kafkaconn.Pinger, log *slog.Logger) (answered bool, err error) {
	err = kafkaconn.Check(ctx, cl, kafkaCheckTimeout)
	if re := kafkaconn.Refused(err); re != nil {
		return false, re
	}
	if err != nil {
		log.Warn("kafka does not answer at start; carrying on", "err", err)
		return false, nil
	}
	return true, nil
}

// topicChecker is a producer that can check that its topics exist
// (*publish.Producer).
type topicChecker interface {
	kafkaconn.Pinger
	CheckTopics(ctx context.Context) error
}

// checkGatewayKafka is checkKafka, then, when a broker answered, a check
// of the gateway's topics (publish.Producer.CheckTopics), which logs each
// missing topic as an error naming UNKNOWN_TOPIC_OR_PARTITION. A missing
// topic does not stop start-up: readiness fails until it is created, and
// events for it wait in the spool (or are refused UNAVAILABLE without
// one).
func checkGatewayKafka(ctx context.Context, p topicChecker, log *slog.Logger) error {
	if answered, err := askKafka(ctx, p, log); !answered {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, kafkaCheckTimeout)
	defer cancel()
	var missing *publish.MissingTopicsError
	if err := p.CheckTopics(tctx); err != nil && !errors.As(err, &missing) {
		log.Warn("kafka did not answer the topic check at start; carrying on", "err", err)
	}
	return nil
}

// checkConn is checkKafka with a client of its own on conn.
func checkConn(ctx context.Context, conn []kgo.Opt, log *slog.Logger) error {
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		return fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	return checkKafka(ctx, cl, log)
}
