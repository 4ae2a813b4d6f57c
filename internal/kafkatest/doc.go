// Package kafkatest gives tests a Kafka to run against: the real cluster
// named by SLUICE_KAFKA_BROKERS when it is set (scripts/kafka.sh up starts
// one), or the SASL_SSL one named by SLUICE_KAFKA_SASL_SSL_BROKERS and its
// CA and SCRAM user (SLUICE_KAFKA_SECURE=1 scripts/kafka.sh up), with a
// topic of the test's own that is deleted afterwards; Fake starts a kfake
// cluster instead, and RecordAt reads one record back (kafkaconn.Read).
package kafkatest
