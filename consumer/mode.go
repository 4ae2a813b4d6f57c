package consumer

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/internal/breaker"
)

// Mode is what the consumer is doing as a whole.
type Mode int32

const (
	// ModeNormal consumes the source topics; DLQ topics are paused.
	ModeNormal Mode = iota
	// ModePaused has fetching paused: the sink's breaker is open.
	ModePaused
	// ModeDrainDLQ consumes the source topics and retries DLQ records at
	// the drain rate: the sink is healthy and the DLQ has records.
	ModeDrainDLQ
)

func (m Mode) String() string {
	switch m {
	case ModeNormal:
		return "NORMAL"
	case ModePaused:
		return "PAUSED"
	case ModeDrainDLQ:
		return "DRAIN_DLQ"
	}
	return fmt.Sprintf("mode(%d)", int32(m))
}

var allModes = [...]Mode{ModeNormal, ModePaused, ModeDrainDLQ}

func (c *Consumer) wakeMode() {
	select {
	case c.modeWake <- struct{}{}:
	default:
	}
}

// modeLoop runs the mode state machine: PAUSED while the breaker is not
// closed (fetching stays on when nothing is in flight, so that a record
// can be the half-open probe), else DRAIN_DLQ while the DLQ has records,
// else NORMAL.
func (c *Consumer) modeLoop(ctx context.Context) {
	for {
		c.evaluateMode()
		select {
		case <-c.modeWake:
		case <-ctx.Done():
			return
		}
	}
}

func (c *Consumer) evaluateMode() {
	st := c.breaker.State()
	c.mu.Lock()
	idle := c.inFlight == 0
	c.mu.Unlock()
	var m Mode
	switch {
	case st != breaker.Closed:
		m = ModePaused
	case c.passActive():
		m = ModeDrainDLQ
	default:
		m = ModeNormal
	}
	switch {
	case m == ModePaused && !idle:
		c.client.PauseFetchTopics(c.sources...)
		c.client.PauseFetchTopics(c.dlqs...)
	case m == ModePaused:
		c.client.ResumeFetchTopics(c.sources...)
	case m == ModeDrainDLQ:
		c.client.ResumeFetchTopics(c.sources...)
		c.client.ResumeFetchTopics(c.dlqs...)
	default:
		c.client.ResumeFetchTopics(c.sources...)
		c.client.PauseFetchTopics(c.dlqs...)
	}
	if old := c.setMode(m); old != m {
		c.log.Info("mode", "from", old.String(), "to", m.String())
	}
}

func (c *Consumer) setMode(m Mode) Mode {
	old := Mode(c.mode.Swap(int32(m)))
	for _, x := range allModes {
		v := 0.0
		if x == m {
			v = 1
		}
		c.m.mode.WithLabelValues(x.String()).Set(v)
	}
	return old
}
