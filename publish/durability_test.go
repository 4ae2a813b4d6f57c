package publish

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// durabilityAdmin is an admin client of a kfake cluster of brokers brokers
// started with opts, closed when the test ends.
func durabilityAdmin(t *testing.T, brokers int, opts ...kfake.Opt) *kadm.Client {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(brokers)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createReplicated creates topic with three partitions of rf replicas and the
// topic configs given.
func createReplicated(t *testing.T, adm *kadm.Client, topic string, rf int16, configs map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := make(map[string]*string, len(configs))
	for k, v := range configs {
		cfg[k] = &v
	}
	resp, err := adm.CreateTopic(ctx, 3, rf, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// weaknesses is CheckDurability's answer as "topic setting=value" lines.
func weaknesses(t *testing.T, adm *kadm.Client, topics ...string) ([]Weakness, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := CheckDurability(ctx, adm, topics)
	if err != nil {
		t.Fatalf("CheckDurability: %v", err)
	}
	var lines []string
	for _, w := range ws {
		lines = append(lines, fmt.Sprintf("%s %s=%s", w.Topic, w.Setting, w.Value))
	}
	return ws, lines
}

// TestCheckDurability: on a cluster of three brokers, each rule finds the
// topic that breaks it, by the setting and the value the cluster answered,
// and nothing else; a topic that is not there is named and not created.
func TestCheckDurability(t *testing.T) {
	adm := durabilityAdmin(t, 3, kfake.AllowAutoTopicCreation())
	createReplicated(t, adm, "kept", 3, map[string]string{SettingMinInsyncReplicas: "2"})
	createReplicated(t, adm, "lone-isr", 3, nil) // min.insync.replicas 1, Kafka's default
	createReplicated(t, adm, "two-replicas", 2, map[string]string{SettingMinInsyncReplicas: "2"})
	createReplicated(t, adm, "one-replica", 1, nil)
	createReplicated(t, adm, "unclean", 3, map[string]string{SettingMinInsyncReplicas: "2", SettingUncleanElection: "true"})
	createReplicated(t, adm, "unmeetable", 3, map[string]string{SettingMinInsyncReplicas: "4"})

	ws, got := weaknesses(t, adm, "kept", "lone-isr", "two-replicas", "one-replica", "unclean", "unmeetable", "absent", "kept")
	want := []string{
		"lone-isr min.insync.replicas=1",
		"two-replicas replication.factor=2",
		"one-replica replication.factor=1",
		"unclean unclean.leader.election.enable=true",
		"unmeetable min.insync.replicas=4",
		"absent =",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("weaknesses:\n got %q\nwant %q", got, want)
	}
	for _, c := range []struct{ topic, says string }{
		{"lone-isr", "set min.insync.replicas=2"},
		{"unmeetable", "NOT_ENOUGH_REPLICAS"},
		{"absent", "UNKNOWN_TOPIC_OR_PARTITION"},
	} {
		i := slices.IndexFunc(ws, func(w Weakness) bool { return w.Topic == c.topic })
		if s := ws[i].String(); !strings.Contains(s, c.says) || !strings.HasPrefix(s, "topic "+c.topic+": ") {
			t.Errorf("%s: %q does not say %q", c.topic, s, c.says)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if td, err := adm.ListTopics(ctx); err != nil || td.Has("absent") {
		t.Errorf("the check created the topic it found missing (or listing failed: %v)", err)
	}
}

// The value that counts is the one the topic has, wherever it comes from:
// a broker default of 2 keeps a topic that sets nothing. One broker is no
// cluster: one replica and min.insync.replicas 1 are all it can have.
func TestCheckDurabilityEffectiveSettings(t *testing.T) {
	adm := durabilityAdmin(t, 3, kfake.BrokerConfigs(map[string]string{SettingMinInsyncReplicas: "2"}))
	createReplicated(t, adm, "by-default", 3, nil)
	createReplicated(t, adm, "lowered", 3, map[string]string{SettingMinInsyncReplicas: "1"})
	if _, got := weaknesses(t, adm, "by-default", "lowered"); !slices.Equal(got, []string{"lowered min.insync.replicas=1"}) {
		t.Errorf("with the broker's min.insync.replicas=2: %q, want only the topic that lowers it", got)
	}

	single := durabilityAdmin(t, 1)
	createReplicated(t, single, "alone", 1, nil)
	if _, got := weaknesses(t, single, "alone"); len(got) != 0 {
		t.Errorf("one broker: %q, want none", got)
	}
}

// A cluster that does not answer is an error, not a clean bill.
func TestCheckDurabilityNoAnswer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ws, err := CheckDurability(ctx, kadm.NewClient(cl), []string{"ingest.x"}); err == nil {
		t.Fatalf("no broker: no error, weaknesses %v", ws)
	}
}
