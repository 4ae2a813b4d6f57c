package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer"
	"github.com/sluicehq/sluice/consumer/trace"
	"github.com/sluicehq/sluice/sink"
)

const traceUsage = `usage:
  sluice trace --config FILE --source S --id ID [--json]
               [--topic T --partition P --offset O] [--max-records N] [--timeout D]

Says where the event (S, ID) is: IN_SINK, IN_DLQ (and when a drain tries it
again), PARKED, PENDING (in its source topic past the consumer group's
committed offset, with the partition's lag) or UNKNOWN; a "trace <id>" line
with the W3C trace id of its record's traceparent, when it had one; then its
path, every audit row the consumer tier wrote about it (each with its trace
id), and what was searched.

The config's consumer block names the group, the source topics and the drain
settings, its kafka block the connection, its sink block the audit table (an
SQLite or PostgreSQL sink; an HTTP sink's rows are read from sluice.audit).
Where the audit table does not settle it, the DLQ and parked topics (and
sluice.audit without an audit table) are scanned from their start, and the
source topics from the group's committed offsets, reading at most
--max-records records in all (the newest of each partition) within
--timeout. --topic, --partition and --offset, from the gateway's answer, read
the source topic's record there instead of scanning the source topics.

exit status: 0 found (any status but UNKNOWN), 1 UNKNOWN, 2 an error
`

// runTraceCmd is `sluice trace`: where an event is, in one step.
func runTraceCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	path := fs.String("config", "", "path of the sluice YAML config (consumer, sink, kafka and contracts blocks)")
	source := fs.String("source", "", "the event's source (required)")
	id := fs.String("id", "", "the event's id (required)")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	topic := fs.String("topic", "", "hint: the source topic the gateway's answer names")
	partition := fs.Int("partition", -1, "hint: its partition")
	offset := fs.Int64("offset", -1, "hint: its offset")
	maxRecords := fs.Int64("max-records", trace.DefaultMaxRecords, "the most Kafka records to read")
	timeout := fs.Duration("timeout", trace.DefaultTimeout, "the longest the lookup may take")
	if err := parseFlags(fs, args, stdout, stderr, traceUsage, ""); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("trace: unexpected argument %q", fs.Arg(0))
	case *path == "":
		fs.Usage()
		return errors.New("trace: --config is required")
	case *source == "" || *id == "":
		return errors.New("trace: --source and --id are required")
	case *maxRecords < 1:
		return errors.New("trace: --max-records must be at least 1")
	case *timeout <= 0:
		return errors.New("trace: --timeout must be positive")
	}
	q := trace.Query{Source: *source, ID: *id, Limits: trace.Limits{MaxRecords: *maxRecords, Timeout: *timeout}}
	if *topic != "" || *partition >= 0 || *offset >= 0 {
		if *topic == "" || *partition < 0 || *offset < 0 {
			return errors.New("trace: --topic, --partition and --offset come together")
		}
		if *partition > math.MaxInt32 {
			return fmt.Errorf("trace: --partition: %d is not a partition number", *partition)
		}
		q.Hint = &trace.Position{Topic: *topic, Partition: int32(*partition), Offset: *offset}
	}
	cfg, err := loadConfig(*path, nil, fileConfig.validateConsumer)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	conn, err := cfg.Kafka.Options(log)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	opts := []trace.Option{trace.WithLogger(log)}
	reader, closeReader, err := openAuditReader(ctx, cfg.Sink)
	if err != nil {
		return err
	}
	defer closeReader()
	if reader != nil {
		opts = append(opts, trace.WithAuditReader(reader))
	}
	tr, err := trace.New(consumerConfig(cfg), conn, opts...)
	if err != nil {
		return err
	}
	defer tr.Close()
	a, err := tr.Trace(ctx, q)
	if err != nil {
		return err
	}
	if *asJSON {
		err = a.WriteJSON(stdout)
	} else {
		err = a.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if a.Status == trace.Unknown {
		return exitStatus(1)
	}
	return nil
}

// openAuditReader opens the sink of cfg for its audit table, nil when it
// has none: an HTTP sink is not opened (its rows are in sluice.audit). An
// SQLite file is only read, never created or written (the consumer
// writing it may hold its lock).
func openAuditReader(ctx context.Context, cfg sink.Config) (audit.Reader, func(), error) {
	nothing := func() {}
	switch cfg.Kind {
	case sink.KindHTTP:
		return nil, nothing, nil
	case sink.KindSQLite:
		r, err := sink.OpenSQLiteAuditReader(ctx, cfg.SQLite)
		if err != nil {
			return nil, nothing, fmt.Errorf("trace: the sqlite sink: %w", err)
		}
		return r, func() { _ = r.Close() }, nil
	}
	s, err := sink.Open(ctx, cfg)
	if err != nil {
		return nil, nothing, err
	}
	closeSink := func() { _ = s.Close() }
	r, ok := s.(audit.Reader)
	if !ok {
		closeSink()
		return nil, nothing, nil
	}
	return r, closeSink, nil
}

// consumerTracer is the Tracer of the consumer's admin endpoint GET
// /v1/trace/{source}/{id}: the consumer's own config and connection,
// reading the audit table of s when it has one.
func consumerTracer(ccfg consumer.Config, conn []kgo.Opt, s sink.Sink, log *slog.Logger) (*trace.Tracer, error) {
	opts := []trace.Option{trace.WithLogger(log)}
	if r, ok := s.(audit.Reader); ok {
		opts = append(opts, trace.WithAuditReader(r))
	}
	return trace.New(ccfg, conn, opts...)
}
