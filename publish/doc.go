// Package publish is sluice's Kafka producer and its one Kafka-error
// classifier: it produces records idempotently, answering every record of
// a batch before the caller's deadline, and Retryable (with TooLarge)
// judges what a failed record means. admission/ decides between Kafka and
// the spool; record/ builds the records.
//
// # Usage
//
//	conn, err := cfg.Config.Options(log) // the connection block, once per process
//	p, err := publish.NewProducer(cfg, conn, publish.WithRegisterer(reg),
//		publish.WithTopics(topics...)) // the topics it writes, for CheckTopics
//	errs := p.Publish(ctx, []*kgo.Record{record.NewEvent(&record.Event{...})})
//	// errs[i] == nil: acknowledged; else publish.Retryable(errs[i]) says
//	// whether sending the event again may succeed.
//
// # Guarantees
//
//   - An acknowledgement means Kafka wrote the record with acks=all. The
//     producer is idempotent, so the client's own retries never write a
//     record twice; with min.insync.replicas >= 2 an acknowledged record
//     survives the loss of a broker.
//   - Records with the same key go to the same partition while the
//     partition count is unchanged (murmur2, as the Java client). Records
//     of one partition are written in order, and a failed record fails
//     every later buffered record of its partition: no successor is
//     written past a gap.
//   - Publish never blocks past its context. A record not answered by
//     then gets an error wrapping ErrTimeout and may still be written
//     (a sent request cannot be withdrawn): a resend may duplicate, never
//     lose. A record nobody waits for is failed after
//     Config.DeliveryTimeout unless a request carrying it is in flight.
//   - Memory is bounded by Config.MaxBufferedRecords and
//     MaxBufferedBytes. At the bound Publish hands over the records of the
//     call that fit, in order, up to the first that does not; that one and
//     every later record of the call fail at once with a retryable
//     ErrBufferFull, so a caller that resends or spools them keeps their
//     keys' order. Sent.HandedOver says a call was cut short.
//   - Records are produced without the caller's context: one caller giving
//     up never fails another's records on the same partition.
//   - Retryable is the one place a Kafka error is judged retryable or
//     permanent; Refusal says why a permanent one is (a fixed set, for
//     metric labels); TooLarge whether it refused the record for its size.
//   - CheckTopics says, with one metadata request, whether the topics named
//     by WithTopics exist (*MissingTopicsError), never creating one, and
//     keeps sluice_kafka_topic_missing{topic}. Ping says whether a broker
//     answers.
//   - CheckDurability says which topics' settings cannot keep an
//     acknowledged record through a broker's loss (min.insync.replicas
//     below 2 with replicas to spare, fewer than 3 replicas on a cluster,
//     unclean leader election on, a min.insync.replicas no write can meet),
//     read with a metadata and a DescribeConfigs request; sluice check
//     --kafka prints them.
//
// Config.BatchMaxBytes must not exceed the smallest max.message.bytes of
// the topics produced to; then MESSAGE_TOO_LARGE means the one record is
// too large.
//
// # What survives a crash
//
// What Kafka acknowledged. Records buffered in the client are lost with
// the process; their callers had no acknowledgement and still hold them.
//
// # What it does not do
//
// It does not spool (admission/ and buffer/ keep what Kafka did not
// take), create topics (a record for a missing topic fails retryably), or
// deduplicate (the consumer tier does). A *kgo.Record passed to Publish is
// the producer's from then on: to send an event again, build a new record.
package publish
