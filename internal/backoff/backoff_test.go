package backoff

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestCeiling(t *testing.T) {
	c := Config{Initial: 100 * time.Millisecond, Max: time.Second}
	for _, tc := range []struct {
		attempt int
		want    time.Duration
	}{
		{0, 100 * time.Millisecond},
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{3, 400 * time.Millisecond},
		{4, 800 * time.Millisecond},
		{5, time.Second},
		{64, time.Second},
		{math.MaxInt, time.Second},
	} {
		if got := c.Ceiling(tc.attempt); got != tc.want {
			t.Errorf("Ceiling(%d) = %v, want %v", tc.attempt, got, tc.want)
		}
	}
	huge := Config{Initial: time.Duration(math.MaxInt64 / 3), Max: time.Duration(math.MaxInt64)}
	if got := huge.Ceiling(10); got <= 0 {
		t.Errorf("Ceiling overflowed to %v", got)
	}
}

func TestWaitIsHeldToTheCeiling(t *testing.T) {
	c := Config{Initial: time.Second, Max: 8 * time.Second}
	var asked []time.Duration
	over := func(ceil time.Duration) time.Duration { asked = append(asked, ceil); return 2 * ceil }
	if got := c.Wait(2, over); got != 2*time.Second {
		t.Errorf("Wait with an over-long jitter = %v, want the ceiling 2s", got)
	}
	under := func(time.Duration) time.Duration { return -time.Second }
	if got := c.Wait(2, under); got != 0 {
		t.Errorf("Wait with a negative jitter = %v, want 0", got)
	}
	if len(asked) != 1 || asked[0] != 2*time.Second {
		t.Errorf("jitter asked with %v, want [2s]", asked)
	}
}

// TestFullStaysInRange checks the bounds of full jitter; its distribution
// is math/rand's.
func TestFullStaysInRange(t *testing.T) {
	for range 1000 {
		if d := Full(10 * time.Millisecond); d < 0 || d > 10*time.Millisecond {
			t.Fatalf("Full(10ms) = %v", d)
		}
	}
	if d := Full(0); d != 0 {
		t.Errorf("Full(0) = %v", d)
	}
	if d := (Config{Initial: time.Second, Max: time.Second}).Wait(3, nil); d < 0 || d > time.Second {
		t.Errorf("Wait with the default jitter = %v", d)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		c     Config
		field string
	}{
		{Config{Initial: time.Second, Max: time.Second}, ""},
		{Config{Initial: 0, Max: time.Second}, "initial"},
		{Config{Initial: -time.Second, Max: time.Second}, "initial"},
		{Config{Initial: 2 * time.Second, Max: time.Second}, "max"},
	} {
		err := tc.c.Validate()
		var fe *FieldError
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%+v: error %v, want one naming %s", tc.c, err, tc.field)
		}
	}
}
