package contract

import "fmt"

// DefaultMaxDepth is the nesting limit WithMaxDepth replaces.
const DefaultMaxDepth = 32

// Option configures Load.
type Option interface{ apply(*options) }

type options struct {
	maxDepth int
}

func defaultOptions() options {
	return options{maxDepth: DefaultMaxDepth}
}

func (o options) validate() error {
	if o.maxDepth < 1 {
		return fmt.Errorf("contract: max depth %d: must be at least 1", o.maxDepth)
	}
	return nil
}

type maxDepthOption int

func (n maxDepthOption) apply(o *options) { o.maxDepth = int(n) }

// WithMaxDepth sets how deep a payload may nest: JSON objects and arrays
// (the payload object itself is depth 1), in JSON and in protobuf binary
// alike, where the depth is that of the JSON form protojson writes of the
// payload (see the package documentation's Depth). The default is
// DefaultMaxDepth (32). Load fails for n < 1.
func WithMaxDepth(n int) Option { return maxDepthOption(n) }
