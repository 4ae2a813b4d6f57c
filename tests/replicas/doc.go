// Package replicas is the end-to-end test of per-source rates across
// gateway replicas: three `sluice gateway` processes on one Kafka count
// each other through the cluster block's heartbeat topic and each enforces
// a source's rate ÷ N.
//
// # Running it
//
// TestIntegrationReplicas runs against the real Kafka named by
// SLUICE_KAFKA_BROKERS (.ci/run's integration step), or, with
// SLUICE_REPLICAS_KFAKE=1 and no brokers, against `sluice kfake` as a
// process of its own; otherwise it is skipped, so `go test ./...` stays
// fast:
//
//	SLUICE_REPLICAS_KFAKE=1 go test -count=1 -v -run TestIntegrationReplicas ./tests/replicas
//
// # What it proves
//
// Source A is sent three times its cluster-wide quota, spread evenly over
// the three gateways. Over a window once every gateway counts three, the
// events accepted for A, summed over the gateways, are within ±15% of the
// quota. Then one gateway is killed with SIGKILL (no tombstone): the load
// goes to the two survivors, as a load balancer's health check would send
// it, and over a window starting member_ttl + heartbeat_interval after the
// kill (the documented time to drop a silent replica) their total is again
// within ±15% of the quota. It logs the rates of both windows, the time the
// survivors took to count two, and the rate in between.
package replicas
