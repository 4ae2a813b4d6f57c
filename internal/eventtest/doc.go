// Package eventtest gives the consumer's and the DLQ tools' tests events
// as the gateway publishes them: the example contracts and later versions
// of them, a valid LogLine, its record under any schema version, and a
// producer for an in-process Kafka; and the publish request bodies the
// gateway's fuzz targets start from.
package eventtest
