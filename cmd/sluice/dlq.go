package main

import (
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/audit"
	"github.com/sluicehq/sluice/consumer/dlq"
	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/internal/kafkaconn"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/record"
	"github.com/sluicehq/sluice/sink"
)

const dlqUsage = `usage:
  sluice dlq list   --config FILE --topic T.dlq [selection]
  sluice dlq show   --config FILE --topic T.dlq --partition P --offset O
  sluice dlq replay --config FILE --topic T.dlq [selection] [--dry-run] [--rate N] [--actor NAME]

The connection is the config's kafka block (brokers, tls, sasl); --brokers
B[,B...] replaces its brokers. list and show may run with --brokers alone,
in plaintext without SASL (show then prints values as base64). replay needs
--config: it produces only to T, which must be one of the consumer's
topics, and checks every record against its contract first. A record whose
envelope names another source topic, or whose value breaks its contract,
is refused and counted. A replay writes a replay.started audit record to
sluice.audit before it produces anything and a replay.finished one after.
Every record it produces carries the replay's id and actor
(sluice-replay-id, sluice-replay-actor), and each gets a replayed audit
row: in the config's sink when it keeps an audit table (sqlite, postgres;
an sqlite file that is not here is not created), else in sluice.audit.

selection (all optional, combined with AND):
  --from, --to TIME        last failure time, RFC 3339; from inclusive, to exclusive
  --source S, --type T     the event's source and type
  --class C                error class: transient, permanent, decode
  --partition P[,P...]     DLQ topic partitions
  --from-offset, --to-offset N   DLQ topic offsets; to exclusive
`

// runDLQCmd is `sluice dlq list|show|replay`: an operator's view of a DLQ
// or parked topic, read with a plain client from start to the current end.
func runDLQCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, dlqUsage)
		return errors.New("dlq: give list, show or replay")
	}
	sub := args[0]
	fs := flag.NewFlagSet("dlq "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, dlqUsage) }
	path := fs.String("config", "", "path of the sluice YAML config (kafka and contracts blocks)")
	brokers := fs.String("brokers", "", "comma-separated seed brokers, instead of the config's kafka.brokers")
	topic := fs.String("topic", "", "DLQ or parked topic (required)")
	from := fs.String("from", "", "")
	to := fs.String("to", "", "")
	source := fs.String("source", "", "")
	typ := fs.String("type", "", "")
	class := fs.String("class", "", "")
	partitions := fs.String("partition", "", "")
	fromOffset := fs.Int64("from-offset", 0, "")
	toOffset := fs.Int64("to-offset", 0, "")
	offset := fs.Int64("offset", -1, "show: the record's offset")
	dryRun := fs.Bool("dry-run", false, "replay: print what would be replayed, produce nothing")
	rate := fs.Float64("rate", 100, "replay: records per second")
	actor := fs.String("actor", os.Getenv("USER"), "replay: who asks, for the audit record")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("dlq %s: unexpected argument %q", sub, fs.Arg(0))
	}
	if *topic == "" {
		return fmt.Errorf("dlq %s: --topic is required", sub)
	}
	var sel dlq.Selection
	var err error
	if sel.From, err = parseFlagTime("from", *from); err != nil {
		return err
	}
	if sel.To, err = parseFlagTime("to", *to); err != nil {
		return err
	}
	sel.Source, sel.Type, sel.Class = *source, *typ, *class
	sel.FromOffset, sel.ToOffset = *fromOffset, *toOffset
	if *partitions != "" {
		for _, p := range strings.Split(*partitions, ",") {
			n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
			if err != nil || n < 0 {
				return fmt.Errorf("dlq: --partition: %q is not a partition number", p)
			}
			sel.Partitions = append(sel.Partitions, int32(n))
		}
	}

	// The connection is the file's kafka block (TLS and SASL included),
	// its brokers replaced by --brokers; --brokers alone is a plaintext
	// connection with the defaults.
	conn := kafkaconn.NewDefaultConfig()
	var registry *contract.Registry
	var registryErr error
	var ingest []string
	var sinkCfg sink.Config
	tracingCfg := tracing.NewDefaultConfig()
	switch {
	case *path != "":
		cfg, err := loadConfig(*path, nil, fileConfig.validateClient)
		if err != nil {
			return err
		}
		conn = cfg.Kafka.Config
		registry, registryErr = contract.LoadFile(cfg.Contracts.DescriptorSet, cfg.Contracts.Types,
			contract.WithMaxDepth(cfg.Gateway.Limits.MaxDepth))
		ccfg := consumerConfig(cfg)
		ingest = ccfg.SourceTopics()
		sinkCfg = cfg.Sink
		tracingCfg = cfg.Tracing
	case sub == "replay":
		return errors.New("dlq replay: --config is required: the ingest topics and contracts come from it")
	case *brokers == "":
		return fmt.Errorf("dlq %s: give --config or --brokers", sub)
	}
	if *brokers != "" {
		conn.Brokers = strings.Split(*brokers, ",")
	}
	kopts, err := conn.Options(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fmt.Errorf("dlq %s: %w", sub, err)
	}

	switch sub {
	case "list":
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PARTITION\tOFFSET\tEVENT ID\tTYPE\tSOURCE\tCLASS\tRETRYABLE\tDLQ RETRIES\tLAST FAILURE\tERROR")
		n := 0
		err := dlq.List(ctx, kopts, *topic, sel, func(d dlq.DeadLetter) error {
			n++
			e := d.Envelope
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%v\t%d\t%s\t%s\n", d.Record.Partition, d.Record.Offset,
				d.Event.ID, d.Event.Type, d.Event.Source, e.Class, e.Retryable, e.DLQRetries,
				e.LastFailureAt.Format(time.RFC3339), oneLine(e.Error, d.EnvelopeErr))
			return nil
		})
		tw.Flush()
		fmt.Fprintf(stderr, "%d dead letters selected\n", n)
		return err
	case "show":
		if len(sel.Partitions) != 1 || *offset < 0 {
			return errors.New("dlq show: give --partition P and --offset O")
		}
		switch {
		case registryErr != nil:
			fmt.Fprintf(stderr, "dlq show: contracts not loaded, values print as base64: %v\n", registryErr)
		case registry == nil:
			fmt.Fprintln(stderr, "dlq show: no --config, values print as base64")
		}
		sel.FromOffset, sel.ToOffset = *offset, *offset+1
		found := false
		err := dlq.List(ctx, kopts, *topic, sel, func(d dlq.DeadLetter) error {
			found = true
			printDeadLetter(stdout, d, registry)
			return nil
		})
		if err == nil && !found {
			err = fmt.Errorf("dlq show: no record at %s/%d@%d", *topic, sel.Partitions[0], *offset)
		}
		return err
	case "replay":
		if registryErr != nil {
			return fmt.Errorf("dlq replay: contracts: %w", registryErr)
		}
		auditor, closeAuditor, err := replayAuditor(ctx, sinkCfg, stderr)
		if err != nil {
			return fmt.Errorf("dlq replay: %w", err)
		}
		defer closeAuditor()
		// The replay's spans (a root per job, one per record linked to
		// the dead letter's trace) go where the file's tracing block
		// sends them, exported before the command returns.
		tp, err := tracing.New(ctx, tracingCfg, "dlq")
		if err != nil {
			return fmt.Errorf("dlq replay: %w", err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), tracingCfg.Exporter.Timeout)
			defer cancel()
			if err := tp.Shutdown(sctx); err != nil {
				fmt.Fprintf(stderr, "dlq replay: tracing: spans not exported: %v\n", err)
			}
		}()
		rep, err := dlq.Replay(ctx, kopts, *topic, sel, dlq.ReplayOptions{
			DryRun: *dryRun, Rate: *rate, Actor: *actor, Progress: stderr,
			Topics: ingest, Registry: registry, Auditor: auditor, TracerProvider: tp.TracerProvider(),
			Each: func(d dlq.DeadLetter, refused error) {
				switch {
				case refused != nil:
					fmt.Fprintf(stdout, "%d\t%d\t%s\trefused: %v\n", d.Record.Partition, d.Record.Offset, d.Event.ID, refused)
				case *dryRun:
					fmt.Fprintf(stdout, "%d\t%d\t%s\t%s -> %s\n", d.Record.Partition, d.Record.Offset, d.Event.ID, d.Envelope.Class, d.Envelope.SourceTopic)
				}
			},
		})
		fmt.Fprintf(stderr, "replay %s: scanned %d, matched %d, replayed %d, refused %d (unreadable %d, source mismatch %d, invalid %d), dry run %v: %s\n",
			*topic, rep.Scanned, rep.Matched, rep.Replayed, rep.Unreadable+rep.Mismatched+rep.Invalid,
			rep.Unreadable, rep.Mismatched, rep.Invalid, rep.DryRun, rep.Outcome)
		return err
	}
	fmt.Fprint(stderr, dlqUsage)
	return fmt.Errorf("dlq: unknown subcommand %q", sub)
}

// replayAuditor opens the config's sink when it keeps an audit table, so
// that a replay's replayed rows join the consumer's in each event's
// trail; nil (sluice.audit) for another sink. An sqlite file that is not
// here (the consumer runs elsewhere) is not created: the rows go to
// sluice.audit, and stderr says so.
func replayAuditor(ctx context.Context, cfg sink.Config, stderr io.Writer) (audit.Writer, func(), error) {
	none := func() {}
	if err := cfg.Validate(); err != nil {
		return nil, none, fmt.Errorf("config: %w", err)
	}
	var s interface {
		audit.Writer
		Close() error
	}
	var err error
	switch cfg.Kind {
	case sink.KindSQLite:
		if _, statErr := os.Stat(cfg.SQLite.Path); errors.Is(statErr, os.ErrNotExist) {
			fmt.Fprintf(stderr, "dlq replay: the sink's database %s is not here: replayed audit rows go to %s\n",
				cfg.SQLite.Path, record.AuditTopic)
			return nil, none, nil
		}
		s, err = sink.OpenSQLite(ctx, cfg.SQLite)
	case sink.KindPostgres:
		s, err = sink.OpenPostgres(ctx, cfg.Postgres)
	default:
		return nil, none, nil
	}
	if err != nil {
		return nil, none, fmt.Errorf("the sink's audit table: %w", err)
	}
	return s, func() { s.Close() }, nil
}

func parseFlagTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("dlq: --%s: %w", name, err)
	}
	return t, nil
}

func oneLine(msg string, envErr error) string {
	if envErr != nil {
		msg = "unreadable envelope: " + envErr.Error()
	}
	msg = strings.Join(strings.Fields(msg), " ")
	return clip.String(msg, 120)
}

func printDeadLetter(w io.Writer, d dlq.DeadLetter, reg *contract.Registry) {
	r := d.Record
	fmt.Fprintf(w, "record     %s/%d@%d  timestamp %s\n", r.Topic, r.Partition, r.Offset, r.Timestamp.UTC().Format(time.RFC3339Nano))
	fmt.Fprintf(w, "key        %q\n", r.Key)
	if d.EnvelopeErr != nil {
		fmt.Fprintf(w, "envelope   unreadable: %v\n", d.EnvelopeErr)
	} else {
		e := d.Envelope
		fmt.Fprintf(w, "class      %s (retryable %v)\n", e.Class, e.Retryable)
		fmt.Fprintf(w, "error      %s\n", e.Error)
		fmt.Fprintf(w, "sink       %s, %d attempts, %d DLQ retries\n", e.Sink, e.Attempts, e.DLQRetries)
		fmt.Fprintf(w, "failures   first %s, last %s\n", e.FirstFailureAt.Format(time.RFC3339Nano), e.LastFailureAt.Format(time.RFC3339Nano))
		fmt.Fprintf(w, "source     %s/%d@%d, group %s\n", e.SourceTopic, e.SourcePartition, e.SourceOffset, e.Group)
		if e.ParkedReason != "" {
			fmt.Fprintf(w, "parked     %s\n", e.ParkedReason)
		}
	}
	fmt.Fprintln(w, "headers")
	for _, h := range r.Headers {
		fmt.Fprintf(w, "  %s: %q\n", h.Key, h.Value)
	}
	js, schema := valueJSON(reg, d)
	if schema != "" {
		fmt.Fprintf(w, "schema     %s\n", schema)
	}
	if js != "" {
		fmt.Fprintf(w, "value      %s\n", js)
	} else {
		fmt.Fprintf(w, "value      base64 %s\n", base64.StdEncoding.EncodeToString(r.Value))
	}
}

// valueJSON renders the value as JSON with the contract of its type when
// that reads it whole: the version it was published under, or the one
// served when the record's is another and the served one reads it
// without loss (dlq.Version). schema says which version the record names
// and how it was read, or why it was not ("" without contracts or
// headers). A value no version at hand reads whole is not rendered: its
// JSON would silently lack the fields the served version does not know.
func valueJSON(reg *contract.Registry, d dlq.DeadLetter) (js, schema string) {
	if reg == nil || d.EventErr != nil {
		return "", ""
	}
	fp := d.Event.Fingerprint
	versions, err := contract.NewVersions(reg, 1)
	if err != nil {
		return "", ""
	}
	c, kept, err := dlq.Version(versions, d.Event.Type, fp, d.Record.Value)
	switch {
	case err != nil:
		return "", fp + " (" + err.Error() + ")"
	case kept:
		schema = fp + " (served)"
	default:
		schema = fp + " (not served; read with the served version " + c.Fingerprint() + ", which reads it whole)"
	}
	b, _, err := c.Render(d.Record.Value)
	if err != nil {
		return "", fp + " (" + err.Error() + ")"
	}
	return string(b), schema
}
