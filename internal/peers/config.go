package peers

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/record"
)

// Config is the cluster block: how the gateway replicas learn how many of
// them are alive. With HeartbeatTopic empty there is no coordination and a
// gateway counts itself alone, as one gateway always did.
type Config struct {
	// HeartbeatTopic is the compacted topic every replica writes its
	// heartbeats to and reads the others' from. Empty turns coordination
	// off: each replica enforces every source's whole rate. Default "".
	HeartbeatTopic string `yaml:"heartbeat_topic"`
	// HeartbeatInterval is how often a replica writes its heartbeat, and
	// how often it looks for replicas that fell silent. Default 1s.
	HeartbeatInterval time.Duration `yaml:"heartbeat_interval"`
	// MemberTTL is how long a replica counts another after that one's last
	// heartbeat: a replica that dies without a word stops being counted
	// within MemberTTL + HeartbeatInterval. At least twice
	// HeartbeatInterval, so that one late heartbeat does not drop a
	// replica. Default 5s.
	MemberTTL time.Duration `yaml:"member_ttl"`
	// ReplicationFactor of the heartbeat topic when sluice creates it; -1
	// is the broker's default. Default -1.
	ReplicationFactor int16 `yaml:"replication_factor"`
	// IOTimeout bounds creating the topic, the first read of the members at
	// start, each heartbeat's write and the farewell at a clean stop.
	// Default 5s.
	IOTimeout time.Duration `yaml:"io_timeout"`
}

// NewDefaultConfig returns the defaults documented on Config:
// coordination off.
func NewDefaultConfig() Config {
	return Config{
		HeartbeatInterval: time.Second,
		MemberTTL:         5 * time.Second,
		ReplicationFactor: -1,
		IOTimeout:         5 * time.Second,
	}
}

// Enabled says whether the replicas coordinate: a heartbeat topic is set.
func (c Config) Enabled() bool { return c.HeartbeatTopic != "" }

// ConfigError names the field of the cluster block that is wrong.
type ConfigError struct {
	Field  string // heartbeat_interval
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("peers: %s: %s", e.Field, e.Reason) }

// Validate reports the first wrong field. A block with coordination off is
// still checked, so that turning it on does not reveal an old mistake.
func (c Config) Validate() error {
	bad := func(field, reason string) error { return &ConfigError{Field: field, Reason: reason} }
	if c.HeartbeatTopic != "" {
		if err := record.CheckTopic(c.HeartbeatTopic); err != nil {
			return bad("heartbeat_topic", err.Error())
		}
	}
	switch {
	case c.HeartbeatInterval < 10*time.Millisecond:
		return bad("heartbeat_interval", "must be at least 10ms")
	case c.MemberTTL < 2*c.HeartbeatInterval:
		return bad("member_ttl", fmt.Sprintf("must be at least twice heartbeat_interval (%v), so that one late heartbeat does not drop a replica", c.HeartbeatInterval))
	case c.ReplicationFactor == 0 || c.ReplicationFactor < -1:
		return bad("replication_factor", "must be -1 (broker default) or >= 1")
	case c.IOTimeout <= 0:
		return bad("io_timeout", "must be > 0")
	}
	return nil
}
