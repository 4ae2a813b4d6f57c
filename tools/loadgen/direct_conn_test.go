package loadgen_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/tools/loadgen"
)

// TestDirectUsesTheConnectionBlock: direct connects with Config.Kafka, so
// it reaches a cluster that wants SCRAM; its brokers come from Addr.
func TestDirectUsesTheConnectionBlock(t *testing.T) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, record.EventTopic(loadgen.TypeLogLine)),
		kfake.EnableSASL(), kfake.Superuser(kafkaconn.MechanismSCRAMSHA256, "load", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	t.Setenv("LOADGEN_TEST_KAFKA_PASSWORD", "pw")
	cfg := loadgen.NewDefaultConfig()
	cfg.Target, cfg.Addr = loadgen.TargetDirect, cluster.ListenAddrs()[0]
	cfg.Kafka.SASL = kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismSCRAMSHA256, Username: "load", PasswordEnv: "LOADGEN_TEST_KAFKA_PASSWORD"}
	cfg.EventsPerRequest, cfg.Events, cfg.Concurrency, cfg.Duration, cfg.Timeout = 5, 20, 1, time.Minute, 10*time.Second
	if rep := runLoad(t, cfg); rep.Accepted != 20 {
		t.Fatalf("accepted %d of 20 over SCRAM: %+v", rep.Accepted, rep)
	}

	cfg.Kafka.SASL.PasswordEnv = "LOADGEN_TEST_UNSET"
	gen, err := loadgen.NewGenerator(cfg, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loadgen.NewTarget(cfg, gen); err == nil {
		t.Fatal("a direct target without its password")
	}
}
