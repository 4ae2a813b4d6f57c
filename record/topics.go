package record

import (
	"errors"
	"fmt"
	"strings"
)

// Topic names. An event type's topic is EventTopic of its type unless the
// config names another; its dead letters go to DLQTopic of that topic and
// what cannot be retried to ParkedTopic; replays, and the decisions a
// consumer of a sink without a database makes, are audited in AuditTopic.
const (
	EventTopicPrefix = "ingest."
	DLQSuffix        = ".dlq"
	ParkedSuffix     = ".parked"
	AuditTopic       = "sluice.audit"
)

// EventTopic is the topic of an event type when the config names none.
func EventTopic(eventType string) string { return EventTopicPrefix + eventType }

// TopicOf is the topic of eventType: topics[eventType] when set, else
// EventTopic(eventType). topics is the deployment's one topic map (the
// top-level topics block of sluice's config file): the gateway publishes,
// and the consumer reads, through it.
func TopicOf(topics map[string]string, eventType string) string {
	if t := topics[eventType]; t != "" {
		return t
	}
	return EventTopic(eventType)
}

// DLQTopic and ParkedTopic name the dead-letter and parked topics of a
// source topic.
func DLQTopic(topic string) string    { return topic + DLQSuffix }
func ParkedTopic(topic string) string { return topic + ParkedSuffix }

// Derived returns a source topic with its DLQ and parked topics, in that
// order: the topics a consumer of it reads or writes.
func Derived(topic string) []string { return []string{topic, DLQTopic(topic), ParkedTopic(topic)} }

// IsDerived reports whether t is a DLQ or parked topic.
func IsDerived(t string) bool {
	return strings.HasSuffix(t, DLQSuffix) || strings.HasSuffix(t, ParkedSuffix)
}

// SourceOf is the source topic of a DLQ or parked topic, and t itself for
// any other (a bare suffix included).
func SourceOf(t string) string {
	for _, suffix := range [...]string{DLQSuffix, ParkedSuffix} {
		if s, ok := strings.CutSuffix(t, suffix); ok && s != "" {
			return s
		}
	}
	return t
}

// TopicsOf is TopicOf of each of types, in order.
func TopicsOf(topics map[string]string, types []string) []string {
	out := make([]string, 0, len(types))
	for _, t := range types {
		out = append(out, TopicOf(topics, t))
	}
	return out
}

// Cluster is every topic a deployment with the given source topics uses:
// AuditTopic, then each source topic with its DLQ and parked topics.
func Cluster(sources []string) []string {
	out := []string{AuditTopic}
	for _, t := range sources {
		out = append(out, Derived(t)...)
	}
	return out
}

// MaxTopicLen is the longest topic name Kafka takes.
const MaxTopicLen = 249

// CheckTopic reports why name cannot be the topic of an event type: a name
// Kafka refuses (empty, "." or "..", over MaxTopicLen bytes, or other than
// ASCII letters, digits, '.', '_' and '-'), a DLQ or parked topic, or
// AuditTopic.
func CheckTopic(name string) error {
	switch {
	case name == "":
		return errors.New("is empty")
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a Kafka topic name", name)
	case len(name) > MaxTopicLen:
		return fmt.Errorf("%q is longer than Kafka's %d bytes", name, MaxTopicLen)
	case IsDerived(name):
		return fmt.Errorf("%q is a DLQ or parked topic (suffix %s or %s)", name, DLQSuffix, ParkedSuffix)
	case name == AuditTopic:
		return fmt.Errorf("%q is sluice's own audit topic", name)
	}
	for _, r := range name {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("%q is not a Kafka topic name: use ASCII letters, digits, '.', '_' and '-'", name)
		}
	}
	return nil
}
