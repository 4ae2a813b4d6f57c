package backoff

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Config is an exponential backoff.
type Config struct {
	// Initial is the ceiling of the first retry's wait.
	Initial time.Duration `yaml:"initial"`
	// Max bounds every ceiling.
	Max time.Duration `yaml:"max"`
}

var (
	errInitial = errors.New("must be positive")
	errMax     = errors.New("must be at least the initial backoff")
)

// FieldError is a Config field that is out of range. Field is "initial" or
// "max"; a caller that names its YAML keys otherwise reports its own.
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }
func (e *FieldError) Unwrap() error { return e.Err }

// Validate reports the first field out of range as a *FieldError.
func (c Config) Validate() error {
	if c.Initial <= 0 {
		return &FieldError{"initial", errInitial}
	}
	if c.Max < c.Initial {
		return &FieldError{"max", errMax}
	}
	return nil
}

// Ceiling is the longest wait before retry number attempt (1 for the
// first): Initial doubled attempt-1 times, at most Max. It does not
// overflow however large attempt is.
func (c Config) Ceiling(attempt int) time.Duration {
	ceil := c.Initial
	for i := 1; i < attempt && ceil < c.Max; i++ {
		if ceil > c.Max/2 {
			return c.Max
		}
		ceil *= 2
	}
	return min(ceil, c.Max)
}

// Jitter draws a wait in [0, ceiling].
type Jitter func(ceiling time.Duration) time.Duration

// Full is full jitter: uniform in [0, ceiling].
func Full(ceiling time.Duration) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling) + 1))
}

// Wait is the wait before retry number attempt, drawn by j (Full when nil)
// under Ceiling(attempt). A j that returns more than the ceiling is held to
// it.
func (c Config) Wait(attempt int, j Jitter) time.Duration {
	if j == nil {
		j = Full
	}
	ceil := c.Ceiling(attempt)
	return max(0, min(j(ceil), ceil))
}
