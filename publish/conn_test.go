package publish

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/internal/kafkaconn"
)

// TestProducerUsesTheConnectionBlock: the producer authenticates with the
// block's SASL settings; without them the cluster refuses it.
func TestProducerUsesTheConnectionBlock(t *testing.T) {
	c := newCluster(t, []string{"t"}, kfake.EnableSASL(), kfake.Superuser(kafkaconn.MechanismSCRAMSHA512, "gw", "pw"))
	t.Setenv("PUBLISH_TEST_KAFKA_PASSWORD", "pw")
	p := newTestProducer(t, c.ListenAddrs(), func(cfg *Config) {
		cfg.SASL = kafkaconn.SASLConfig{Mechanism: kafkaconn.MechanismSCRAMSHA512, Username: "gw", PasswordEnv: "PUBLISH_TEST_KAFKA_PASSWORD"}
	})
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if errs := p.Publish(ctx, []*kgo.Record{{Topic: "t", Value: []byte("v")}}); errs[0] != nil {
		t.Fatalf("publish with SASL: %v", errs[0])
	}

	anon := newTestProducer(t, c.ListenAddrs(), nil)
	if err := anon.Ping(ctx); err == nil {
		t.Fatal("a producer without the block's SASL settings was let in")
	}
}

// TestNewProducerTakesTheConnection: the connection given to NewProducer replaces the
// one it would make of the block.
func TestNewProducerTakesTheConnection(t *testing.T) {
	c := newCluster(t, []string{"t"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	p := newTestProducerOn(t, []string{closed}, []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if errs := p.Publish(ctx, []*kgo.Record{{Topic: "t", Value: []byte("v")}}); errs[0] != nil {
		t.Fatalf("publish over the given connection: %v", errs[0])
	}
}
