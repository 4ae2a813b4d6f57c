package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The topic settings CheckDurability judges: two topic configs, and the
// replication factor, which is the length of a partition's replica list.
const (
	SettingMinInsyncReplicas = "min.insync.replicas"
	SettingUncleanElection   = "unclean.leader.election.enable"
	SettingReplicationFactor = "replication.factor"
)

// A Weakness is a topic whose settings cannot keep the promise that an
// acknowledged record survives the loss of a broker (acks=all, see the
// package doc), or a topic that is not there: what CheckDurability finds.
type Weakness struct {
	Topic string
	// Setting is SettingMinInsyncReplicas, SettingUncleanElection or
	// SettingReplicationFactor, and "" for a topic the cluster does not
	// have.
	Setting string
	// Value is the setting's value as the cluster answered it.
	Value string
	// Why says what can happen to an acknowledged record under it.
	Why string
}

func (w Weakness) String() string {
	if w.Setting == "" {
		return fmt.Sprintf("topic %s: %s", w.Topic, w.Why)
	}
	return fmt.Sprintf("topic %s: %s=%s: %s", w.Topic, w.Setting, w.Value, w.Why)
}

// CheckDurability asks the cluster, with a metadata request and a
// DescribeConfigs request, how each of topics is replicated, and returns
// its weaknesses, in the order of topics, each topic's in the order below:
//
//   - a topic the cluster does not have (UNKNOWN_TOPIC_OR_PARTITION): the
//     producer's records for it wait, and nothing else is judged;
//   - a replication factor below 3 on a cluster of more than one broker:
//     with min.insync.replicas 2 one broker down stops every write, with 1
//     a record can be acknowledged by one broker alone;
//   - a replication factor of 2 or more and min.insync.replicas below 2:
//     acks=all waits only for the replicas in sync, which can be the leader
//     alone; a record it alone acknowledged is lost with that broker (its
//     disk, or its page cache in a power loss);
//   - min.insync.replicas above the replication factor: every write is
//     refused NOT_ENOUGH_REPLICAS;
//   - unclean.leader.election.enable=true: a replica out of sync may lead,
//     and what the old leader acknowledged past it is truncated.
//
// The replication factor is a partition's replica count, the smallest of
// the topic's partitions. A config the cluster does not answer has Kafka's
// default (min.insync.replicas 1, unclean election off). It creates
// nothing and changes nothing. An error means the cluster did not answer
// both requests, or refused them (authorization); no weakness is returned
// with one.
func CheckDurability(ctx context.Context, adm *kadm.Client, topics []string) ([]Weakness, error) {
	topics = unique(topics)
	if len(topics) == 0 {
		return nil, nil
	}
	meta, err := adm.Metadata(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("publish: topic metadata: %w", err)
	}
	var exist []string
	for _, t := range topics {
		if d, ok := meta.Topics[t]; ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			exist = append(exist, t)
		}
	}
	configs := make(map[string]map[string]string, len(exist))
	if len(exist) > 0 {
		rcs, err := adm.DescribeTopicConfigs(ctx, exist...)
		if err != nil {
			return nil, fmt.Errorf("publish: describe topic configs: %w", err)
		}
		for _, rc := range rcs {
			if rc.Err != nil {
				return nil, fmt.Errorf("publish: describe configs of topic %s: %w", rc.Name, rc.Err)
			}
			values := make(map[string]string, len(rc.Configs))
			for _, c := range rc.Configs {
				values[c.Key] = c.MaybeValue()
			}
			configs[rc.Name] = values
		}
	}
	var out []Weakness
	for _, t := range topics {
		d, ok := meta.Topics[t]
		if !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition) {
			out = append(out, Weakness{Topic: t, Why: "the cluster has no such topic (" + kerr.UnknownTopicOrPartition.Message +
				"): records for it are not acknowledged until it is created"})
			continue
		}
		out = append(out, judge(t, replicationFactor(d), len(meta.Brokers), configs[t])...)
	}
	return out, nil
}

// unique is topics without repeats, in their first order.
func unique(topics []string) []string {
	var out []string
	for _, t := range topics {
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// replicationFactor is the smallest replica count of the topic's
// partitions, 0 when it has none.
func replicationFactor(d kadm.TopicDetail) int {
	rf := 0
	for _, p := range d.Partitions {
		if n := len(p.Replicas); rf == 0 || n < rf {
			rf = n
		}
	}
	return rf
}

// judge is CheckDurability's rules for one topic that exists.
func judge(topic string, rf, brokers int, configs map[string]string) []Weakness {
	var out []Weakness
	weak := func(setting, value, why string) {
		out = append(out, Weakness{Topic: topic, Setting: setting, Value: value, Why: why})
	}
	minISR := 1
	minISRValue := configs[SettingMinInsyncReplicas]
	if n, err := strconv.Atoi(minISRValue); err == nil {
		minISR = n
	} else {
		minISRValue = strconv.Itoa(minISR)
	}
	rfValue := strconv.Itoa(rf)
	if brokers > 1 && rf < 3 {
		weak(SettingReplicationFactor, rfValue, fmt.Sprintf(
			"fewer than 3 replicas on a cluster of %d brokers: with min.insync.replicas=2 one broker down stops every write, with 1 one broker alone may hold an acknowledged record",
			brokers))
	}
	if rf >= 2 && minISR < 2 {
		weak(SettingMinInsyncReplicas, minISRValue, fmt.Sprintf(
			"with %d replicas, acks=all is satisfied by the leader alone once the others fall out of sync, and a record only it holds is lost with it: set min.insync.replicas=2",
			rf))
	}
	if minISR > rf {
		weak(SettingMinInsyncReplicas, minISRValue, fmt.Sprintf(
			"above the replication factor %d: every write is refused NOT_ENOUGH_REPLICAS", rf))
	}
	if v := configs[SettingUncleanElection]; v == "true" {
		weak(SettingUncleanElection, v,
			"a replica out of sync may be elected leader, and the acknowledged records it lacks are truncated from the others")
	}
	return out
}
