// Package backoff is sluice's one retry schedule: exponential backoff with
// full jitter. The n-th consecutive failure waits a uniform time in
// [0, min(Max, Initial·2ⁿ⁻¹)]. The consumer's sink retries, the pollers'
// partner retries and the spool drainer's Kafka retries all use it.
//
// It keeps no state: the caller counts its failures and asks for the wait
// of the next one.
package backoff
