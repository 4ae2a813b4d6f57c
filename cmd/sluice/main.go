// Command sluice is the ingestion gateway.
//
//	sluice dev                       everything in one process on embedded defaults
//	sluice gateway --config FILE     the gateway against a real Kafka cluster
//	sluice consumer --config FILE    the consumer tier: Kafka to the sink, DLQ
//	sluice check --config FILE       validate a config without starting anything
//	sluice contracts diff|list       judge a new descriptor set against the running one; list the contracts
//	sluice dlq list|show|replay      inspect and replay a DLQ or parked topic
//	sluice sink migrate|recent       create or upgrade the sink's table; print the newest events
//	sluice hash-key KEY              the config form of an API key
//	sluice spool inspect DIR         a spool's state, read-only
//	sluice loadgen [flags]           load generator and transport baselines
//	sluice kfake --addr ADDR         in-memory Kafka on its own
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/buffer"
)

const usage = `sluice: an ingestion gateway

Usage:
  sluice dev [flags]                 gateway + in-process Kafka + example contracts + demo key
  sluice gateway --config FILE       the gateway, from one YAML config file
  sluice consumer --config FILE      the consumer tier: ingest topics to the sink, with DLQ and breaker
  sluice check --config FILE         validate a config (files, certificates, contracts, every block) and start nothing
  sluice contracts diff OLD NEW      judge a new descriptor set against the running one, per event type (exit 1: incompatible)
  sluice contracts list --config F   print each contract's type, fingerprint, topic, compatibility policy and decoders
  sluice dlq list|show|replay        list, show or replay (rate limited, audited) a DLQ or parked topic
  sluice trace --source S --id ID    where an event is: in the sink, its DLQ, parked or pending (exit 1: unknown)
  sluice sink migrate --config FILE  create or upgrade the sink's table (PostgreSQL, or SQLite also by --sqlite PATH)
  sluice sink recent --sqlite PATH   print the newest events in an SQLite sink
  sluice hash-key KEY                print the sha256 of an API key for sources[].key_hashes
  sluice spool inspect DIR           print a spool's segments, cursor, pending records and damage (read-only)
  sluice loadgen [flags]             send load to a gateway (or Kafka directly) and report throughput and latency
  sluice loadgen serve-baseline      a plain HTTP or gRPC server to measure the transport floor against
  sluice kfake --addr ADDR           the in-memory Kafka of "sluice dev" as a process of its own

Run "sluice COMMAND -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exitCode(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// exitCode is 0 for success and for a help request (-h, --help: the
// usage was printed), an exitStatus's own status, and 2 for any other
// error, which it prints.
func exitCode(err error, stderr io.Writer) int {
	var status exitStatus
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &status):
		return int(status)
	}
	fmt.Fprintln(stderr, "sluice:", err)
	return 2
}

// exitStatus is an error that ends the command with that status and
// prints nothing more: the command has printed its answer (sluice
// contracts diff: 1, incompatible).
type exitStatus int

func (s exitStatus) Error() string { return fmt.Sprintf("exit status %d", int(s)) }

// usages are the commands whose first argument is a subcommand or a
// positional one, so that "sluice COMMAND --help" is answered before it
// is parsed as one. The other commands answer -h through their flag sets.
var usages = map[string]string{
	"dlq":       dlqUsage,
	"sink":      sinkUsage,
	"contracts": contractsUsage,
	"spool":     "usage: sluice spool inspect DIR\n\nprints a spool's segments, cursor, pending records and damage; read-only\n",
	"hash-key":  "usage: sluice hash-key KEY\n\nprints the hex sha256 of KEY, the form sources[].key_hashes takes\n",
}

func helpFlag(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// helpAsked says whether args (a command of usages and what follows) ask
// for its usage: a help flag right after the command, or right after its
// subcommand. A help flag further on is some flag's value
// (--actor -h), and a bare "help" may be an argument (hash-key help).
func helpAsked(args []string) bool {
	switch {
	case len(args) >= 2 && helpFlag(args[1]):
		return true
	case len(args) >= 3 && helpFlag(args[2]):
		return args[0] == "dlq" || args[0] == "sink" || args[0] == "spool" || args[0] == "contracts"
	}
	return false
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("give a command")
	}
	if u, ok := usages[args[0]]; ok && helpAsked(args) {
		fmt.Fprint(stdout, u)
		return nil
	}
	switch args[0] {
	case "dev":
		return runDev(ctx, args[1:], stdout, stderr)
	case "consumer":
		return runConsumerCmd(ctx, args[1:], stderr)
	case "check":
		return runCheckCmd(args[1:], stdout, stderr)
	case "contracts":
		return runContractsCmd(args[1:], stdout, stderr)
	case "dlq":
		return runDLQCmd(ctx, args[1:], stdout, stderr)
	case "trace":
		return runTraceCmd(ctx, args[1:], stdout, stderr)
	case "sink":
		return runSinkCmd(ctx, args[1:], stdout, stderr)
	case "gateway":
		return runGatewayCmd(ctx, args[1:], stderr)
	case "loadgen":
		return runLoadgenCmd(ctx, args[1:], stdout, stderr)
	case "kfake":
		return runKfakeCmd(ctx, args[1:], stdout, stderr)
	case "spool":
		if len(args) != 3 || args[1] != "inspect" {
			return errors.New("spool: usage: sluice spool inspect DIR")
		}
		report, err := buffer.Inspect(args[2])
		if err != nil {
			return err
		}
		fmt.Fprint(stdout, report.String())
		return nil
	case "hash-key":
		if len(args) != 2 {
			return errors.New("hash-key: give exactly one key")
		}
		fmt.Fprintln(stdout, hashKey(args[1]))
		return nil
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
