// Package peers counts the gateway replicas alive, through a small
// compacted Kafka topic of heartbeats, so that each replica can enforce
// its share (1/N) of every source's cluster-wide rate. No other
// coordination service is involved.
//
// # Usage
//
//	m, err := peers.New(cfg, conn, svc.SetReplicas, peers.WithMetrics(met))
//	err = m.Start(ctx) // onChange(n) once, then whenever n changes
//	...
//	m.Close() // writes this replica's tombstone
//
// # The heartbeat topic
//
// Each replica has a member id (NewID: host name and 16 random hex
// digits, new at every start). Every Config.HeartbeatInterval it writes a
// record keyed by its id whose value is {"id": id, "time": RFC 3339 UTC}
// (Heartbeat.Encode), and it reads the whole topic from its start. A clean
// stop writes a tombstone (the key with no value). Start creates the topic
// when it is missing: one partition, cleanup.policy compact,delete (the
// last heartbeat of each member is what a starting replica needs; the
// heartbeats of members gone for an hour are deleted with their segment).
//
// # Counting
//
// N is this replica plus every other member whose last heartbeat is at
// most Config.MemberTTL old. A member is alive at the earlier of its
// heartbeat's own time and the time it was read, so a heartbeat read from
// the backlog at start that is older than the TTL is of a member gone
// (ignored, counted as stale), and a clock ahead of this one cannot keep a
// member counted longer. Replicas' clocks must agree to well within
// MemberTTL − HeartbeatInterval (NTP does).
//
//   - A replica that starts is counted by the others as soon as they read
//     its first heartbeat (one fetch, well under HeartbeatInterval); it
//     counts them before it serves: Start reads the topic until it reads
//     its own first heartbeat back, within Config.IOTimeout.
//   - A replica that stops cleanly is dropped as soon as its tombstone is
//     read.
//   - A replica that dies without a word is dropped within MemberTTL +
//     HeartbeatInterval of its death.
//
// Members are dropped for silence only while this replica reads its own
// heartbeats back within the TTL. One cut off from the topic cannot tell
// the others' silence from its own blindness: it keeps the count it has,
// and so errs towards enforcing less than its share rather than every
// replica enforcing the whole rate. A replica that cannot reach Kafka at
// start counts itself alone until it reads its heartbeats back.
//
// # Bounds
//
// At most DefaultMaxMembers (1024) other members are counted; a heartbeat
// of one more is ignored, logged and counted in
// sluice_gateway_heartbeats_ignored_total{reason="over_cap"}. At most 8
// heartbeats wait for Kafka; one that would pass them is counted in
// sluice_gateway_heartbeat_write_errors_total and dropped (the next
// interval writes another). Every call to Kafka has a deadline: IOTimeout
// for the topic's creation, the start's read and the tombstone, the
// delivery timeout (IOTimeout) for each heartbeat, and half an interval
// for each read.
//
// # What it does not do
//
//   - It does not divide rates: its caller does, with the count it gets.
//   - It does not fence: two replicas that see different counts for a
//     moment (during a join or a leave) each enforce their own.
//   - A record that is not a heartbeat (DecodeHeartbeat) is ignored and
//     counted, never fatal.
package peers
