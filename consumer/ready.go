package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/internal/breaker"
)

// errBreakerOpen is Ready's answer while the sink's breaker is open.
var errBreakerOpen = errors.New("consumer: the sink's circuit breaker is open")

// Ready reports whether the consumer can do its work: its Kafka client
// reaches the cluster (a ping within ctx) and the sink's circuit breaker
// is not open. It is meant for readiness checks.
func (c *Consumer) Ready(ctx context.Context) error {
	if c.deliverer.breakerState() == breaker.Open {
		return errBreakerOpen
	}
	if err := c.client.Ping(ctx); err != nil {
		return fmt.Errorf("consumer: kafka: %w", err)
	}
	return nil
}
