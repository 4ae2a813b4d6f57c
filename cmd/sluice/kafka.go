package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
)

// kafkaCheckTimeout bounds the start-up check of the Kafka connection.
const kafkaCheckTimeout = 10 * time.Second

// checkKafka asks the cluster for metadata at start. Credentials or a
// certificate the cluster refuses stop start-up: no retry fixes them. A
// cluster that does not answer does not: the gateway spools (or refuses
// UNAVAILABLE) and the consumer waits until it is back.
func checkKafka(ctx context.Context, cl kafkaconn.Pinger, log *slog.Logger) error {
	err := kafkaconn.Check(ctx, cl, kafkaCheckTimeout)
	if re := kafkaconn.Refused(err); re != nil {
		return re
	}
	if err != nil {
		log.Warn("kafka does not answer at start; carrying on", "err", err)
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
