package consumer

import (
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

// wakeMode has the mode evaluated again soon.
func (d *drainer) wakeMode() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// woken receives when the mode is to be evaluated again.
func (d *drainer) woken() <-chan struct{} { return d.wake }

// evaluate runs one step of the mode state machine, given the breaker's
// state and whether nothing is in flight: PAUSED while the breaker is not
// closed (fetching stays on when nothing is in flight, so that a record
// can be the half-open probe), else DRAIN_DLQ while a pass runs, else
// NORMAL.
func (d *drainer) evaluate(st breaker.State, idle bool) {
	var m Mode
	switch {
	case st != breaker.Closed:
		m = ModePaused
	case d.passActive():
		m = ModeDrainDLQ
	default:
		m = ModeNormal
	}
	switch {
	case m == ModePaused && !idle:
		d.fetch.PauseFetchTopics(d.sources...)
		d.fetch.PauseFetchTopics(d.dlqs...)
	case m == ModePaused:
		d.fetch.ResumeFetchTopics(d.sources...)
	case m == ModeDrainDLQ:
		d.fetch.ResumeFetchTopics(d.sources...)
		d.fetch.ResumeFetchTopics(d.dlqs...)
	default:
		d.fetch.ResumeFetchTopics(d.sources...)
		d.fetch.PauseFetchTopics(d.dlqs...)
	}
	if old := d.setMode(m); old != m {
		d.log.Info("mode", "from", old.String(), "to", m.String())
	}
}

// current returns the mode.
func (d *drainer) current() Mode { return Mode(d.mode.Load()) }

func (d *drainer) setMode(m Mode) Mode {
	old := Mode(d.mode.Swap(int32(m)))
	for _, x := range allModes {
		v := 0.0
		if x == m {
			v = 1
		}
		d.modeGauge.WithLabelValues(x.String()).Set(v)
	}
	return old
}
