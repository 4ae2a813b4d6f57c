// Package publish is sluice's Kafka producer and its one Kafka-error
// classifier: it produces records idempotently, answering every record of a
// batch before the caller's deadline, and Retryable (with TooLarge)
// judges what a failed record means. Nothing else: admission/ decides
// between Kafka and the spool, record/ builds the records.
//
// # Usage
//
//	cfg := publish.NewDefaultConfig()
//	cfg.Brokers = []string{"kafka-0:9092"} // TLS and SASL: cfg.TLS, cfg.SASL (internal/kafkaconn)
//	p, err := publish.NewProducer(cfg, publish.WithRegisterer(reg),
//		publish.WithTopics(topics...)) // the topics it writes, for CheckTopics
//	...
//	rec := record.NewEvent(&record.Event{Topic: record.EventTopic("order.created"), ...})
//	errs := p.Publish(ctx, []*kgo.Record{rec})
//	// errs[i] == nil: acknowledged. Otherwise publish.Retryable(errs[i])
//	// says whether sending the event again may succeed.
//
// # Guarantees
//
//   - An acknowledgement (errs[i] == nil) means Kafka wrote the record with
//     acks=all: the partition leader and every in-sync replica have it. The
//     producer is idempotent (franz-go's default, kept on explicitly), so the
//     client's own internal retries never write a record twice; with
//     min.insync.replicas >= 2 on the topic, an acknowledged record survives
//     the loss of a broker.
//   - Records with the same key go to the same partition while the topic's
//     partition count is unchanged: the partitioner hashes keys with murmur2
//     exactly like the Java client, so producers in other languages agree.
//     Records of one partition are written in the order they were produced
//     and a failed record fails every later buffered record of its partition,
//     so a successor is never written past a gap. record.NewEvent always sets a key
//     (the event id when the event has no partition key).
//   - Publish never blocks past its context. A record that is not answered
//     when the context ends gets an error wrapping ErrTimeout; it may still be
//     written later (the idempotent producer cannot withdraw a request it has
//     sent), so the caller may see a duplicate in Kafka after resending, but
//     never a loss. The consumer tier deduplicates by event id.
//   - A record that nobody waits for any more is still bounded: it is failed
//     by the client after Config.DeliveryTimeout unless a request carrying it
//     is already in flight, in which case the client waits for the broker's
//     answer.
//   - Memory is bounded: at most Config.MaxBufferedRecords records and
//     Config.MaxBufferedBytes bytes are buffered in the client. At the bound,
//     Publish hands over the records of the call that fit, in order, up to
//     the first that does not; that one and every later record of the call
//     are answered at once with a retryable error wrapping ErrBufferFull:
//     push-back, not a queue. A record is never refused while a later one
//     of the same call gets in, so a caller that sends the refused records
//     again (or spools them) keeps their keys' order. Sent.HandedOver tells
//     a caller with several calls in flight that one was cut short.
//   - Callers do not affect each other: records are produced without the
//     caller's context, so one caller giving up early never fails records
//     of another caller buffered on the same partition.
//   - Retryable is the one place where a Kafka error is judged retryable or
//     permanent; Refusal says why a permanent one is (too_large,
//     unauthorized, invalid, unsupported: a fixed set for metric labels),
//     and TooLarge is the one place where it is judged a refusal of the
//     record for its size (a permanent one).
//   - Ping says whether a broker answers within ctx, for readiness checks.
//     CheckTopics says, with one metadata request within ctx, whether the
//     topics named by WithTopics exist: a *MissingTopicsError
//     (UNKNOWN_TOPIC_OR_PARTITION) names those that do not. It never
//     creates a topic, also on a broker with auto.create.topics.enable. It
//     keeps sluice_kafka_topic_missing{topic} and logs a topic found
//     missing as an error, once, and found again at info.
//
// Config.BatchMaxBytes must not exceed the smallest max.message.bytes of the
// topics produced to (the default, 1 MiB, is below Kafka's default of
// 1048588). Then a batch is never refused by the broker for its size and a
// MESSAGE_TOO_LARGE error means that the one record is too large.
//
// # What it does not do
//
//   - It does not spool. A record that Kafka did not acknowledge is the
//     caller's to keep: admission (admission/) and the disk spool (buffer/)
//     decide what happens to it.
//   - It does not create topics. Production topics are created by operators
//     (or, for the embedded dev cluster, by the dev command); a record for a
//     missing topic fails with a retryable UNKNOWN_TOPIC_OR_PARTITION error
//     (it is taken once the topic exists), and CheckTopics reports the
//     topic as the configuration error it is.
//   - It does not deduplicate: the same event published twice is two records.
//   - A *kgo.Record passed to Publish belongs to the producer from then on,
//     even after Publish returned with an error: to send an event again, build
//     a new record.
package publish
