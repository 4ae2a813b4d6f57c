package tracing

// TracerName names the tracer every sluice component takes from its
// provider: tp.Tracer(TracerName).
const TracerName = "github.com/sluicehq/sluice"

// Attribute keys of sluice's spans. The messaging ones follow the
// OpenTelemetry semantic conventions for messaging (Kafka); the sluice.*
// ones are sluice's own.
const (
	AttrSource       = "sluice.source"
	AttrTransport    = "sluice.transport"
	AttrEvents       = "sluice.events"
	AttrRequestBytes = "sluice.request.bytes"
	AttrOutcome      = "sluice.outcome"
	AttrAdmission    = "sluice.admission"
	AttrSink         = "sluice.sink"

	AttrMessagingSystem  = "messaging.system" // always "kafka"
	AttrDestination      = "messaging.destination.name"
	AttrOperationType    = "messaging.operation.type" // send, process, receive
	AttrEventID          = "messaging.message.id"
	AttrPartition        = "messaging.destination.partition.id"
	AttrOffset           = "messaging.kafka.offset"
	AttrConsumerGroup    = "messaging.consumer.group.name"
	MessagingSystemKafka = "kafka"
	OperationSend        = "send"
	OperationProcess     = "process"
	OperationReceive     = "receive"
)
