package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/internal/clip"
	"github.com/sluicehq/sluice/sink"
)

const sinkUsage = `usage:
  sluice sink migrate (--config FILE | --sqlite PATH)        create or upgrade the sink's table
  sluice sink recent  (--config FILE | --sqlite PATH) [-n N] print the newest events (of an existing sink, read only)
`

// runSinkCmd is `sluice sink migrate|recent`.
func runSinkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "migrate" && args[0] != "recent") {
		fmt.Fprint(stderr, sinkUsage)
		return errors.New("sink: give migrate or recent")
	}
	fs := flag.NewFlagSet("sink "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path of the sluice YAML config (its sink block)")
	sqlitePath := fs.String("sqlite", "", "an SQLite sink file (instead of --config)")
	n := new(int)
	if args[0] == "recent" {
		n = fs.Int("n", 10, "how many of the newest events to print (at most 1000)")
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	cfg := sink.NewDefaultConfig()
	switch {
	case *path != "":
		fc, err := loadConfig(*path, nil, fileConfig.validateSink)
		if err != nil {
			return err
		}
		cfg = fc.Sink
	case *sqlitePath != "":
		cfg.SQLite.Path = *sqlitePath
	default:
		fs.Usage()
		return errors.New("sink: --config is required")
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if args[0] == "migrate" {
		switch cfg.Kind {
		case sink.KindPostgres:
			if err := sink.Migrate(ctx, cfg.Postgres.DSN, cfg.Postgres.Table); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "table %s is at schema version %d\n", cfg.Postgres.Table, sink.PostgresSchemaVersion)
		case sink.KindSQLite:
			if err := sink.MigrateSQLite(ctx, cfg.SQLite); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "table %s in %s is at schema version %d\n", cfg.SQLite.Table, cfg.SQLite.Path, sink.SQLiteSchemaVersion)
		default:
			return fmt.Errorf("sink migrate: the %s sink has no table; migrate is for postgres and sqlite", cfg.Kind)
		}
		return nil
	}
	var rows []sink.Row
	switch cfg.Kind {
	case sink.KindSQLite:
		// Read only: a path with no sink there is an error, not a new
		// empty one (which would print nothing and exit 0 after a typo).
		s, err := sink.OpenSQLiteReader(ctx, cfg.SQLite)
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sink recent: no SQLite sink at %s (the consumer creates it when it starts): %w", cfg.SQLite.Path, err)
		}
		if err != nil {
			return err
		}
		defer s.Close()
		if rows, err = s.Recent(ctx, *n); err != nil {
			return err
		}
	default:
		return fmt.Errorf("sink recent: reads the sqlite sink; for %s query its table", cfg.Kind)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT ID\tTYPE\tSOURCE\tKEY\tOCCURRED AT\tTOPIC[PARTITION]@OFFSET\tPAYLOAD")
	for _, r := range rows {
		payload := clip.Bytes(r.Payload, 80)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s[%d]@%d\t%s\n", r.EventID, r.EventType, r.Source, r.PartitionKey,
			r.OccurredAt.UTC().Format(time.RFC3339), r.Topic, r.KafkaPartition, r.KafkaOffset, payload)
	}
	return tw.Flush()
}
