// Package ownership runs sluice's pollers across replicas: one owner per
// poller, picked by a Kafka consumer group, and each poller's cursor kept
// in a compacted Kafka topic.
//
// # Usage
//
//	oc := ownership.NewDefaultConfig()
//	conn, err := kafkaBlock.Options(log) // kafkaconn: brokers, TLS, SASL
//	r, err := ownership.NewRunner(oc, conn, pollers, svc, ownership.WithRegisterer(reg))
//	err = r.Start(ctx) // pollers run while this replica owns them
//	...
//	r.Close()
//
// # One owner per poller
//
// The Runner joins the consumer group Config.Group over the compacted
// topic Config.Topic, which has one partition per poller: poller i of the
// list sorted by name is partition i. Start creates the topic with as many
// partitions as pollers when it is missing and refuses to start
// (*TopicMismatchError) when the count differs. The replica assigned
// partition i runs poller i (pull.NewPoller, pull.Poller.Run). The group
// never consumes the topic (its fetches are paused) and commits no
// offsets; it only assigns. On revoke or loss the poller is stopped and
// waited for before the callback returns, so with a clean rebalance the
// next owner starts after the last save of the previous one.
//
// # The cursor record
//
// Partition i holds poller i's records only: key the poller's name, value
// a pull.CursorRecord as JSON. On assignment the poller loads the last
// record of its partition; compaction keeps a key's last record. Each new
// position is produced to partition i by the group's client, idempotent
// with acks=all: the produce being acknowledged is "saved durably", and
// pull saves a position only once its page's items are settled.
//
// # What survives a crash
//
// The cursor topic: a replica that dies loses nothing but its place in
// the group, and the poller's next owner resumes from the last
// acknowledged save, repeating at most one page (whose repeats the event
// ids absorb). A cursor record that does not decode is not taken for "no
// cursor": that poller logs the error and retries the load with backoff
// until an operator produces a good record, since starting afresh would
// re-admit the feed's whole history.
//
// Failure modes: a replica cut off from Kafka keeps its pollers until it
// notices the lost session, so for up to the session timeout a zombie
// owner may poll and admit once more while the new owner polls the same
// pages; its save may land after the new owner's first ones. Either way a
// page is repeated, never skipped (every saved position is past pages
// whose items were settled), and repeats are absorbed by event ids.
// Adding or removing a poller changes the partition count and needs the
// topic to be grown (or recreated) to match; renaming one leaves the old
// name's last record in the partition, which the new poller ignores and
// starts afresh.
//
// # What it does not do
//
//   - It does not poll: pull does, and judges every answer.
//   - It does not fence a zombie owner: a page may be polled twice around
//     a rebalance (see above), never skipped.
//   - Cursors of pollers that were removed are not deleted from the topic.
package ownership
