// Package eventtest gives the consumer's and the DLQ tools' tests events
// as the gateway publishes them: the example contracts, a valid LogLine,
// its record, and a producer for an in-process Kafka.
package eventtest
