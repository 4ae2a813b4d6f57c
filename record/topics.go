package record

import "strings"

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
// EventTopic(eventType).
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
