package admission

import (
	"errors"
	"time"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/publish"
)

// Durability says where an admitted record was made durable.
type Durability int

const (
	// DurabilityKafka: acknowledged by Kafka with acks=all.
	DurabilityKafka Durability = iota + 1
	// DurabilityLocalDisk: fsync'd in the spool; the drainer publishes it.
	DurabilityLocalDisk
)

// Admitted is the answer for one record. Err is nil when the record is
// durable, Durability says where, and the position fields where exactly:
// Partition and Offset in the record's topic for DurabilityKafka, Spool
// for DurabilityLocalDisk. Otherwise Refusal says what kind of refusal it
// is, and RetryAfter is the wait to suggest when retrying may help (a full
// spool, Kafka unavailable without a spool).
type Admitted struct {
	Durability Durability
	// Partition and Offset are where Kafka acknowledged the record, in its
	// topic (the record's Topic), as the client set them on the record.
	Partition int32
	Offset    int64
	// Spool is the record's position in the spool, where it stays until
	// the drainer has published it to Kafka.
	Spool      buffer.Position
	Refusal    Refusal
	Err        error
	RetryAfter time.Duration
}

// Refusal is why a record was not made durable, in the kinds a caller
// branches on. Admission judges it once, from the record's error, in
// refusalOf.
type Refusal int

const (
	// NotRefused: the record is durable.
	NotRefused Refusal = iota
	// RefusedFull: the spool is over its byte cap or its disk is full
	// (buffer.ErrFull). RetryAfter estimates when the drainer will have
	// freed the room, from the measured drain rate.
	RefusedFull
	// RefusedTooLargeForKafka: Kafka, or the producer before it, refused
	// the record for its size (publish.TooLarge). The same record is
	// refused every time.
	RefusedTooLargeForKafka
	// RefusedTooLargeForSpool: the record alone is over what the spool
	// takes (buffer.ErrTooLarge). The same record is refused every time.
	RefusedTooLargeForSpool
	// RefusedRetryable: the record was not made durable now, and sending
	// it again may succeed (publish.Retryable): Kafka did not acknowledge
	// it and there was no spool, or the caller's deadline came first, or a
	// spool append failed for another reason than a full spool.
	RefusedRetryable
	// RefusedPermanent: Kafka refused the record, and will again for the
	// same record (publish.Retryable is false).
	RefusedPermanent
)

func (r Refusal) String() string {
	switch r {
	case NotRefused:
		return "NOT_REFUSED"
	case RefusedFull:
		return "FULL"
	case RefusedTooLargeForKafka:
		return "TOO_LARGE_FOR_KAFKA"
	case RefusedTooLargeForSpool:
		return "TOO_LARGE_FOR_SPOOL"
	case RefusedRetryable:
		return "RETRYABLE"
	case RefusedPermanent:
		return "PERMANENT"
	}
	return "UNKNOWN"
}

// refused is the answer for a record that err kept from being durable.
func refused(err error, retryAfter time.Duration) Admitted {
	return Admitted{Refusal: refusalOf(err), Err: err, RetryAfter: retryAfter}
}

// refusalOf is the one place admission judges why a record was refused:
// the spool's errors here, Kafka's by publish's classifier.
func refusalOf(err error) Refusal {
	switch {
	case err == nil:
		return NotRefused
	case errors.Is(err, buffer.ErrFull):
		return RefusedFull
	case publish.TooLarge(err):
		return RefusedTooLargeForKafka
	case errors.Is(err, buffer.ErrTooLarge):
		return RefusedTooLargeForSpool
	case publish.Retryable(err):
		return RefusedRetryable
	}
	return RefusedPermanent
}
