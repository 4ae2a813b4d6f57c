package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/consumer"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/gateway"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/peers"
	"github.com/sluicehq/sluice/internal/tlsfiles"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/pull"
	"github.com/sluicehq/sluice/pull/ownership"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

// fileConfig is the sluice config file. Every block starts from its
// package's defaults; the file sets what differs.
type fileConfig struct {
	// parseConfig hands Topics to gateway.Config.Topics, consumerConfig
	// to consumer.Config.TypeTopics.

	// Topics is the one topic map of the deployment, event type -> Kafka
	// topic; a type it leaves out goes to ingest.<type>. Each key is one
	// of contracts.types. Every role reads it: the gateway and its pollers
	// publish through it, the consumer's event_types resolve through it,
	// and the DLQ, replay and trace commands find the ingest topics by it.
	Topics map[string]string `yaml:"topics"`
	// Gateway is sluice gateway's listeners, limits, HTTP timeouts and
	// dedup.
	Gateway gateway.Config `yaml:"gateway"`
	// Sources are who may publish to the gateway: each with API key
	// hashes (or key_env), client certificates or a webhook scheme, the
	// event types it may send and its rate. The gateway needs at least one
	// source or poller.
	Sources []sourceFile `yaml:"sources"`
	// Contracts are the protobuf messages that are event types, the
	// descriptor set they come from, and how a new one is judged.
	Contracts contractsConfig `yaml:"contracts"`
	// Kafka is the connection every Kafka client uses (gateway, pollers,
	// consumer, dlq, trace), then the gateway's producer.
	Kafka publish.Config `yaml:"kafka"`
	// Spool is the gateway's local disk spool, used while Kafka pushes
	// back; without dir, no spool.
	Spool buffer.Config `yaml:"spool"`
	// Admission decides per event between Kafka directly and the spool.
	Admission admission.Config `yaml:"admission"`
	// Log is the level and format of every command's log.
	Log logConfig `yaml:"log"`
	// Pollers are partner APIs the gateway pulls events from; each has one
	// owner among the gateway replicas (poller_ownership).
	Pollers []pull.Config `yaml:"pollers"`
	// PollerOwnership is how the gateway replicas share the pollers: the
	// consumer group they join and the compacted topic that holds each
	// poller's cursor (one partition per poller); the group's assignment
	// gives every poller one owner.
	PollerOwnership ownership.Config `yaml:"poller_ownership"`
	// Cluster is how the gateway replicas count each other through a
	// compacted Kafka topic of heartbeats, so that each enforces its share
	// (÷ N alive) of every source's events/s and bytes/s. Without
	// heartbeat_topic, a gateway enforces the whole rates, alone.
	Cluster peers.Config `yaml:"cluster"`
	// Tracing is OpenTelemetry tracing, the same block for every role:
	// off by default; on, spans go over OTLP to exporter.endpoint.
	Tracing tracing.Config `yaml:"tracing"`
	// Consumer is sluice consumer's group, the topics it reads, its
	// retries, breaker and DLQ.
	Consumer consumer.Config `yaml:"consumer"`
	// Sink is where the consumer writes events, idempotent by event id:
	// sqlite, postgres or http.
	Sink sink.Config `yaml:"sink"`
	// Admin is the admin listener of sluice gateway and sluice consumer
	// (metrics, probes, profiles); with addr unset, each takes its own
	// default address (admin.DefaultGatewayAddr 127.0.0.1:9100,
	// admin.DefaultConsumerAddr 127.0.0.1:9101), so both run from one file.
	Admin admin.Config `yaml:"admin"`

	// roles are the commands whose blocks the file has (rolesOf): with
	// both, the consumer must read every topic the gateway publishes to.
	roles fileRoles
}

// fileRoles says which commands' blocks a config file has.
type fileRoles struct {
	// gateway: sources or pollers; consumer: a consumer or sink block.
	gateway, consumer bool
}

// sourceFile is a source as the file gives it: key hashes inline, or keys
// read from the environment at start (key_env) and hashed then.
type sourceFile struct {
	gateway.SourceConfig `yaml:",inline"`
	KeyEnv               []string `yaml:"key_env"`
}

type contractsConfig struct {
	// DescriptorSet is a buf image or FileDescriptorSet file.
	DescriptorSet string `yaml:"descriptor_set"`
	// Types are the message names that are event types.
	Types []string `yaml:"types"`
	// KeepVersions is how many versions of each type the consumer keeps
	// to decode records published under them: 1 to 16
	// (contract.MaxKeepVersions).
	KeepVersions int `yaml:"keep_versions"`
	// Reload is how a running process notices a new descriptor set.
	Reload reloadConfig `yaml:"reload"`
	// Compatibility is how a new descriptor set is judged against the
	// running one.
	Compatibility compatibilityConfig `yaml:"compatibility"`
}

type reloadConfig struct {
	// WatchInterval is how often the descriptor set file is hashed for a
	// change; 0 turns the watch off (SIGHUP and the admin endpoint still
	// reload); at least 100ms (minWatchInterval) otherwise.
	WatchInterval time.Duration `yaml:"watch_interval"`
}

// minWatchInterval bounds how often the descriptor set file is read and
// hashed.
const minWatchInterval = 100 * time.Millisecond

// compatibilityConfig is the contract.Policies of the file: a mode and
// allow_tightening for every type, and per-type entries that override
// them.
type compatibilityConfig struct {
	Mode            contract.Mode `yaml:"mode"` // backward (default), forward, full or none
	AllowTightening bool          `yaml:"allow_tightening"`
	// Types are per-type policies; each key must be one of contracts.types.
	Types map[string]compatibilityOverride `yaml:"types"`
}

// compatibilityOverride is one type's policy. A key it leaves out is the
// block's: {mode: none} keeps the block's allow_tightening.
type compatibilityOverride struct {
	Mode            contract.Mode `yaml:"mode"`
	AllowTightening *bool         `yaml:"allow_tightening"`
}

func newDefaultContractsConfig() contractsConfig {
	return contractsConfig{
		KeepVersions:  contract.DefaultKeepVersions,
		Reload:        reloadConfig{WatchInterval: 2 * time.Second},
		Compatibility: compatibilityConfig{Mode: contract.ModeBackward},
	}
}

// validate checks the block; its errors name the field's path.
func (c contractsConfig) validate() error {
	if c.DescriptorSet == "" {
		return errors.New("config: contracts.descriptor_set: must name a buf image or descriptor set file")
	}
	if len(c.Types) == 0 {
		return errors.New("config: contracts.types: list the message names that are event types")
	}
	if c.KeepVersions < 1 || c.KeepVersions > contract.MaxKeepVersions {
		return fmt.Errorf("config: contracts.keep_versions: %d is not within [1, %d]", c.KeepVersions, contract.MaxKeepVersions)
	}
	switch w := c.Reload.WatchInterval; {
	case w < 0:
		return fmt.Errorf("config: contracts.reload.watch_interval: %s is negative (0 turns the watch off)", w)
	case w > 0 && w < minWatchInterval:
		return fmt.Errorf("config: contracts.reload.watch_interval: %s is below %s (0 turns the watch off)", w, minWatchInterval)
	}
	if _, err := contract.ParseMode(string(c.Compatibility.Mode)); err != nil {
		return fmt.Errorf("config: contracts.compatibility.mode: %q is not backward, forward, full or none", c.Compatibility.Mode)
	}
	for _, typ := range slices.Sorted(maps.Keys(c.Compatibility.Types)) {
		if !slices.Contains(c.Types, typ) {
			return fmt.Errorf("config: contracts.compatibility.types.%s: not one of contracts.types", typ)
		}
		if m := c.Compatibility.Types[typ].Mode; m != "" {
			if _, err := contract.ParseMode(string(m)); err != nil {
				return fmt.Errorf("config: contracts.compatibility.types.%s.mode: %q is not backward, forward, full or none", typ, m)
			}
		}
	}
	return nil
}

// policies are the compatibility policies of a validated block. Each
// per-type entry takes what it leaves unset, mode or allow_tightening,
// from the block.
func (c contractsConfig) policies() contract.Policies {
	mode := func(m contract.Mode) contract.Mode {
		parsed, _ := contract.ParseMode(string(m))
		return parsed
	}
	p := contract.Policies{Default: contract.Policy{Mode: mode(c.Compatibility.Mode), AllowTightening: c.Compatibility.AllowTightening}}
	if len(c.Compatibility.Types) > 0 {
		p.Types = make(map[string]contract.Policy, len(c.Compatibility.Types))
	}
	for typ, o := range c.Compatibility.Types {
		pol := p.Default
		if o.Mode != "" {
			pol.Mode = mode(o.Mode)
		}
		if o.AllowTightening != nil {
			pol.AllowTightening = *o.AllowTightening
		}
		p.Types[typ] = pol
	}
	return p
}

type logConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error; default info
	Format string `yaml:"format"` // json or text; default json
}

func defaultFileConfig() fileConfig {
	return fileConfig{
		Gateway:   gateway.NewDefaultConfig(),
		Contracts: newDefaultContractsConfig(),
		Kafka:     publish.NewDefaultConfig(),
		Admission: admission.NewDefaultConfig(),
		// No dir: no spool, until the file names one.
		Spool:    buffer.NewDefaultConfig(""),
		Log:      logConfig{Level: "info", Format: "json"},
		Consumer: consumer.NewDefaultConfig(),
		Sink:     sink.NewDefaultConfig(),
		Admin:    admin.NewDefaultConfig(),

		PollerOwnership: ownership.NewDefaultConfig(),
		Cluster:         peers.NewDefaultConfig(),
		Tracing:         tracing.NewDefaultConfig(),
	}
}

// rolesOf reads which commands' blocks the file raw has. A file that
// still has the gateway's topic map, gateway.topics, is refused: the map
// is the top-level topics block now, which every role reads, and a map
// that only the gateway read is how orders went where no consumer looked.
func rolesOf(raw []byte) (fileRoles, error) {
	var top struct {
		Sources  yaml.Node `yaml:"sources"`
		Pollers  yaml.Node `yaml:"pollers"`
		Consumer yaml.Node `yaml:"consumer"`
		Sink     yaml.Node `yaml:"sink"`
		Gateway  struct {
			Topics yaml.Node `yaml:"topics"`
		} `yaml:"gateway"`
	}
	// What does not decode here, the strict decode into fileConfig names.
	_ = yaml.NewDecoder(bytes.NewReader(raw)).Decode(&top)
	if t := top.Gateway.Topics; !t.IsZero() {
		return fileRoles{}, fmt.Errorf("config: gateway.topics (line %d): the topic map has moved to the top-level topics block, which the gateway, the consumer and every other command read: move the block out of gateway, unindented", t.Line)
	}
	present := func(n yaml.Node) bool { return !n.IsZero() && n.Tag != "!!null" }
	return fileRoles{
		gateway:  present(top.Sources) || present(top.Pollers),
		consumer: present(top.Consumer) || present(top.Sink),
	}, nil
}

// validate checks what the gateway uses: every block but consumer and
// sink; with a consumer block in the file too, that the consumer reads
// what the gateway publishes.
func (c fileConfig) validate() error {
	if err := c.Gateway.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.checkListenersTLS(); err != nil {
		return err
	}
	if err := c.Admin.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.validateClient(); err != nil {
		return err
	}
	if err := c.Admission.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.Spool.Dir != "" {
		if err := c.Spool.Validate(); err != nil {
			return spoolError(err)
		}
	} else if c.Admission.SpoolFirst {
		return errors.New("config: admission.spool_first: needs spool.dir")
	}
	if err := c.checkRecordFits(); err != nil {
		return err
	}
	for i, p := range c.Pollers {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("config: pollers[%d]: %w", i, err)
		}
	}
	if err := c.validateOwnership(); err != nil {
		return err
	}
	if err := c.validateCluster(); err != nil {
		return err
	}
	if err := c.Tracing.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.checkPollerSources(); err != nil {
		return err
	}
	if c.roles.consumer {
		return c.checkConsumerReads()
	}
	return nil
}

// checkPollerSources refuses a poller whose source (by default its name)
// is a push source's or an earlier poller's, unless its share_source says
// that is meant: an event's identity is (source, id), so the two would
// share one id space, and an id both send would be taken for a duplicate
// (or refused as a conflict) instead of two events.
func (c fileConfig) checkPollerSources() error {
	owner := make(map[string]string)
	for i, s := range c.Gateway.Sources {
		owner[s.Name] = fmt.Sprintf("is the name of sources[%d]", i)
	}
	for i, p := range c.Pollers {
		name := p.SourceName()
		if is, taken := owner[name]; taken && !p.ShareSource {
			by := ""
			if p.Source == "" {
				by = " (the poller's name)"
			}
			return fmt.Errorf("config: pollers[%d].source: %q%s %s: the poller's events would share that (source, id) space, so an id both send would be taken for the same event; give the poller a source of its own, or set pollers[%d].share_source: true if that is meant",
				i, name, by, is, i)
		}
		if _, taken := owner[name]; !taken {
			owner[name] = fmt.Sprintf("is also the source of pollers[%d]", i)
		}
	}
	return nil
}

// publishers are the event types the gateway may accept, each with the
// first source or poller that may publish it, in contracts.types order.
func (c fileConfig) publishers() (types []string, by map[string]string) {
	by = make(map[string]string)
	for i, s := range c.Gateway.Sources {
		for _, typ := range c.Contracts.Types {
			if _, seen := by[typ]; !seen && (slices.Contains(s.EventTypes, "*") || slices.Contains(s.EventTypes, typ)) {
				by[typ] = fmt.Sprintf("sources[%d] %s", i, s.Name)
			}
		}
	}
	for i, p := range c.Pollers {
		for _, typ := range p.Mapping.ContractTypes() {
			if _, seen := by[typ]; !seen && slices.Contains(c.Contracts.Types, typ) {
				by[typ] = fmt.Sprintf("pollers[%d] %s", i, p.Name)
			}
		}
	}
	for _, typ := range c.Contracts.Types {
		if _, ok := by[typ]; ok {
			types = append(types, typ)
		}
	}
	return types, by
}

// checkConsumerReads refuses a file with both a gateway and a consumer in
// which the consumer does not read a topic the gateway publishes to: every
// type a source or poller may publish must have its topic (through the
// topics block) among the consumer's, and each of consumer.topics must be
// the topic of one of contracts.types.
func (c fileConfig) checkConsumerReads() error {
	cc := consumerConfig(c)
	mapped := make(map[string]bool)
	for _, typ := range c.Contracts.Types {
		mapped[c.topicOf(typ)] = true
	}
	for _, t := range cc.Topics {
		if !mapped[t] {
			return fmt.Errorf("config: consumer.topics: %q is the topic of none of contracts.types (under the topics block, %s): list the types in consumer.event_types instead",
				t, c.typeTopicsText(c.Contracts.Types))
		}
	}
	reads := cc.SourceTopics()
	types, by := c.publishers()
	var unread []string
	for _, typ := range types {
		if !slices.Contains(reads, c.topicOf(typ)) {
			unread = append(unread, fmt.Sprintf("%s -> %s (%s may publish it)", typ, c.topicOf(typ), by[typ]))
		}
	}
	if len(unread) > 0 {
		return fmt.Errorf("config: consumer.event_types: no consumer in this file reads the topic of %s: such events would be accepted and never reach the sink; add the types to consumer.event_types, or leave event_types and topics out to read every contract type",
			strings.Join(unread, "; "))
	}
	return nil
}

// typeTopicsText lists where each of types goes: "a -> t, b -> u".
func (c fileConfig) typeTopicsText(types []string) string {
	var out []string
	for _, typ := range types {
		out = append(out, typ+" -> "+c.topicOf(typ))
	}
	return strings.Join(out, ", ")
}

// checkListenersTLS refuses a gateway listener that would serve plaintext
// beyond loopback: API keys and events would cross the network in clear.
// Its TLS block's insecure: true says that is meant.
func (c fileConfig) checkListenersTLS() error {
	for _, field := range c.Gateway.PlaintextExposed() {
		addr, block := c.Gateway.GRPCAddr, "grpc_tls"
		if field == "http_addr" {
			addr, block = c.Gateway.HTTPAddr, "http_tls"
		}
		return fmt.Errorf("config: gateway.%s: %s leaves loopback without TLS: set gateway.%s.cert_file and key_file, or gateway.%s.insecure: true to serve plaintext there knowingly",
			field, addr, block, block)
	}
	return nil
}

// warnInsecure logs each listener that serves plaintext beyond loopback
// because the config says insecure: true for it.
func (c fileConfig) warnInsecure(log *slog.Logger, withGateway bool) {
	type listener struct {
		block, addr string
		tls         tlsfiles.ListenerConfig
	}
	ls := []listener{{"admin", c.Admin.Addr, c.Admin.Listener()}}
	if withGateway {
		ls = append(ls, listener{"gateway.grpc_tls", c.Gateway.GRPCAddr, c.Gateway.GRPCTLS},
			listener{"gateway.http_tls", c.Gateway.HTTPAddr, c.Gateway.HTTPTLS})
	}
	for _, l := range ls {
		if l.tls.Insecure && l.tls.PlaintextBeyondLoopback(l.addr) {
			log.Warn("listener serves plaintext beyond loopback ("+l.block+" insecure: true): credentials and events cross the network in clear", "addr", l.addr)
		}
	}
}

// checkRecordFits refuses a config in which an event the gateway accepts
// could make a record that the spool or a Kafka batch cannot hold: it
// would be answered and then never published, or refused on every retry.
func (c fileConfig) checkRecordFits() error {
	var sources []string
	for _, s := range c.Gateway.Sources {
		sources = append(sources, s.Name)
	}
	for _, p := range c.Pollers {
		sources = append(sources, p.SourceName())
	}
	sz := c.Gateway.RecordLimits(sources, c.topics()).Sizes()
	why := fmt.Sprintf("an event within gateway.limits.max_event_bytes (%d) and the envelope's limits makes a record of up to",
		c.Gateway.Limits.MaxEventBytes)
	if sz.Batch > int(c.Kafka.BatchMaxBytes) {
		return fmt.Errorf("config: kafka.batch_max_bytes: %d is too small: %s %d bytes in a record batch", c.Kafka.BatchMaxBytes, why, sz.Batch)
	}
	if c.Spool.Dir == "" {
		return nil
	}
	if err := c.Spool.CheckRecord(sz.Spooled); err != nil {
		var ce *buffer.ConfigError
		if !errors.As(err, &ce) {
			return fmt.Errorf("config: spool: %w", err)
		}
		return fmt.Errorf("config: spool.%s: too small: %s %d bytes spooled (%v)", ce.Field, why, sz.Spooled, ce.Err)
	}
	return nil
}

// spoolError names a spool field by its path in the file.
func spoolError(err error) error {
	var ce *buffer.ConfigError
	if errors.As(err, &ce) {
		return fmt.Errorf("config: spool.%s: %w", ce.Field, ce.Err)
	}
	return fmt.Errorf("config: spool: %w", err)
}

// topics are the topics the gateway publishes to: one per contract type,
// through the topics block.
func (c fileConfig) topics() []string { return record.TopicsOf(c.Topics, c.Contracts.Types) }

// topicOf is the topic of an event type, through the topics block.
func (c fileConfig) topicOf(typ string) string { return record.TopicOf(c.Topics, typ) }

// validateTopics checks the topics block: each key one of contracts.types,
// each value a topic Kafka takes that is none of sluice's own.
func (c fileConfig) validateTopics() error {
	pollers := c.PollerOwnership.Topic
	for _, typ := range slices.Sorted(maps.Keys(c.Topics)) {
		if !slices.Contains(c.Contracts.Types, typ) {
			return fmt.Errorf("config: topics.%s: not one of contracts.types", typ)
		}
		t := c.Topics[typ]
		if err := record.CheckTopic(t); err != nil {
			if t == "" {
				return fmt.Errorf("config: topics.%s: %w: leave the type out for its default topic, %s", typ, err, record.EventTopic(typ))
			}
			return fmt.Errorf("config: topics.%s: %w", typ, err)
		}
		if t == pollers {
			return fmt.Errorf("config: topics.%s: %q is sluice's own pollers' cursor topic", typ, t)
		}
	}
	return nil
}

// validateOwnership checks the poller_ownership block: its errors name
// the field's path in the file.
func (c fileConfig) validateOwnership() error {
	err := c.PollerOwnership.Validate()
	if err == nil {
		return c.checkOwnershipTopic()
	}
	var ce *pull.ConfigError
	if errors.As(err, &ce) {
		return fmt.Errorf("config: poller_ownership.%s: %s", strings.TrimPrefix(ce.Field, "ownership."), ce.Reason)
	}
	return fmt.Errorf("config: poller_ownership: %w", err)
}

// checkOwnershipTopic refuses a cursor topic Kafka would not take.
func (c fileConfig) checkOwnershipTopic() error {
	if err := record.CheckTopic(c.PollerOwnership.Topic); err != nil {
		return fmt.Errorf("config: poller_ownership.topic: %w", err)
	}
	return nil
}

// validateConsumer checks what the consumer tier uses: kafka, contracts,
// log, consumer and sink.
func (c fileConfig) validateConsumer() error {
	if err := c.validateClient(); err != nil {
		return err
	}
	cc := consumerConfig(c)
	if err := cc.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	for _, typ := range cc.EventTypes {
		if !slices.Contains(c.Contracts.Types, typ) {
			return fmt.Errorf("config: consumer.event_types: %s is not one of contracts.types", typ)
		}
	}
	if err := c.Admin.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.Sink.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.Tracing.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if c.roles.gateway {
		return c.checkConsumerReads()
	}
	return nil
}

// validateSink checks the sink block and the log.
func (c fileConfig) validateSink() error {
	if err := c.Sink.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return c.validateLog()
}

// validateClient checks what every Kafka client of sluice uses: kafka,
// contracts and log.
func (c fileConfig) validateClient() error {
	// Its errors name their path (kafka.tls.ca_file, kafka.linger).
	if err := c.Kafka.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.Contracts.validate(); err != nil {
		return err
	}
	if err := c.validateTopics(); err != nil {
		return err
	}
	// dlq replay traces with the file's tracing block.
	if err := c.Tracing.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return c.validateLog()
}

// validateContracts checks the contracts block alone, for the commands
// that read only it (sluice contracts).
func (c fileConfig) validateContracts() error { return c.Contracts.validate() }

func (c fileConfig) validateLog() error {
	if _, err := c.Log.level(); err != nil {
		return err
	}
	if c.Log.Format != "json" && c.Log.Format != "text" {
		return fmt.Errorf("config: log.format: %q is not json or text", c.Log.Format)
	}
	return nil
}

func (l logConfig) level() (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(l.Level))); err != nil {
		return 0, fmt.Errorf("config: log.level: %q is not debug, info, warn or error", l.Level)
	}
	return lv, nil
}

func (l logConfig) logger(w io.Writer) *slog.Logger {
	lv, _ := l.level()
	opts := &slog.HandlerOptions{Level: lv}
	if l.Format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func hashKey(key string) string { return gateway.HashKey(key) }
