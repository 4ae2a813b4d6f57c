package consumer

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClientNoLinger: the consumer's client sends its audit rows and dead
// letters without lingering (franz-go's default is 10ms), since a job
// finishes only once they are acknowledged.
func TestClientNoLinger(t *testing.T) {
	c, err := New(testConfig("linger"), testVersions(t), newMemSink(), []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.client.Close()
	if got := c.client.OptValue(kgo.ProducerLinger); got != time.Duration(0) {
		t.Fatalf("producer linger %v, want 0", got)
	}
}
