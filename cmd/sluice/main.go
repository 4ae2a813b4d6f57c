// Command sluice is the ingestion gateway.
//
//	sluice dev [flags]                 gateway + in-process Kafka + example contracts + demo key
//	sluice gateway --config FILE       the gateway, from one YAML config file
//	sluice consumer --config FILE      the consumer tier: ingest topics to the sink, with DLQ and breaker
//	sluice check --config FILE         validate a config (files, certificates, contracts, every block) and start nothing
//	sluice config defaults             print the config file with every key at its default, each with its comment
//	sluice contracts diff OLD NEW      judge a new descriptor set against the running one, per event type (exit 1: incompatible)
//	sluice contracts list --config F   print each contract's type, fingerprint, topic, compatibility policy and decoders
//	sluice dlq list|show|replay        list, show or replay (rate limited, audited) a DLQ or parked topic
//	sluice trace --source S --id ID    where an event is: in the sink, its DLQ, parked or pending (exit 1: unknown)
//	sluice sink migrate --config FILE  create or upgrade the sink's table (PostgreSQL, or SQLite also by --sqlite PATH)
//	sluice sink recent --sqlite PATH   print the newest events in an SQLite sink
//	sluice hash-key KEY|-              print the sha256 of an API key for sources[].key_hashes (-: read it from stdin)
//	sluice spool inspect DIR           print a spool's segments, cursor, pending records and damage (read-only)
//	sluice loadgen [flags]             send load to a gateway (or Kafka directly) and report throughput and latency
//	sluice loadgen serve-baseline      a plain HTTP or gRPC server to measure the transport floor against
//	sluice loadgen serve-otlp          an OTLP/HTTP endpoint that counts the spans it is sent
//	sluice kfake --addr ADDR           the in-memory Kafka of "sluice dev" as a process of its own
//	sluice version                     print the version, commit and build time of this binary (also --version, -v)
//
// The list is the usage text's, which the table of commands writes; a test
// keeps the two equal.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluicehq/sluice/buffer"
)

// command is one of sluice's commands: the table below is the one list
// of them, from which the usage text, the help answers and the dispatch
// are written.
type command struct {
	name string
	// synopses are the command's lines in the usage text: how it is
	// called, and what it does.
	synopses [][2]string
	// help, when set, is the command's usage, printed for "sluice NAME
	// -h" before its arguments are parsed: the command's first argument
	// is a subcommand or a positional one. The other commands answer -h
	// through their flag sets.
	help string
	// subcommands says that a help flag after the first argument (a
	// subcommand: "sluice dlq list -h") also asks for help.
	subcommands bool
	run         func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands are sluice's commands, in the usage text's order.
var commands = []command{
	{name: "dev", synopses: [][2]string{{"sluice dev [flags]", "gateway + in-process Kafka + example contracts + demo key"}},
		run: runDev},
	{name: "gateway", synopses: [][2]string{{"sluice gateway --config FILE", "the gateway, from one YAML config file"}},
		run: runGatewayCmd},
	{name: "consumer", synopses: [][2]string{{"sluice consumer --config FILE", "the consumer tier: ingest topics to the sink, with DLQ and breaker"}},
		run: runConsumerCmd},
	{name: "check", synopses: [][2]string{{"sluice check --config FILE", "validate a config (files, certificates, contracts, every block) and start nothing"}},
		run: func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
			return runCheckCmd(ctx, args, stdout, stderr)
		}},
	{name: "config", synopses: [][2]string{{"sluice config defaults", "print the config file with every key at its default, each with its comment"}},
		help: configUsage, subcommands: true, run: runConfigCmd},
	{name: "contracts", synopses: [][2]string{
		{"sluice contracts diff OLD NEW", "judge a new descriptor set against the running one, per event type (exit 1: incompatible)"},
		{"sluice contracts list --config F", "print each contract's type, fingerprint, topic, compatibility policy and decoders"}},
		help: contractsUsage, subcommands: true,
		run: func(_ context.Context, args []string, stdout, stderr io.Writer) error {
			return runContractsCmd(args, stdout, stderr)
		}},
	{name: "dlq", synopses: [][2]string{{"sluice dlq list|show|replay", "list, show or replay (rate limited, audited) a DLQ or parked topic"}},
		help: dlqUsage, subcommands: true, run: runDLQCmd},
	{name: "trace", synopses: [][2]string{{"sluice trace --source S --id ID", "where an event is: in the sink, its DLQ, parked or pending (exit 1: unknown)"}},
		run: runTraceCmd},
	{name: "sink", synopses: [][2]string{
		{"sluice sink migrate --config FILE", "create or upgrade the sink's table (PostgreSQL, or SQLite also by --sqlite PATH)"},
		{"sluice sink recent --sqlite PATH", "print the newest events in an SQLite sink"}},
		help: sinkUsage, subcommands: true, run: runSinkCmd},
	{name: "hash-key", synopses: [][2]string{{"sluice hash-key KEY|-", "print the sha256 of an API key for sources[].key_hashes (-: read it from stdin)"}},
		help: hashKeyUsage,
		run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
			return runHashKeyCmd(args, os.Stdin, stdout)
		}},
	{name: "spool", synopses: [][2]string{{"sluice spool inspect DIR", "print a spool's segments, cursor, pending records and damage (read-only)"}},
		help: "usage: sluice spool inspect DIR\n\nprints a spool's segments, cursor, pending records and damage; read-only\n", subcommands: true,
		run: runSpoolCmd},
	{name: "loadgen", synopses: [][2]string{
		{"sluice loadgen [flags]", "send load to a gateway (or Kafka directly) and report throughput and latency"},
		{"sluice loadgen serve-baseline", "a plain HTTP or gRPC server to measure the transport floor against"},
		{"sluice loadgen serve-otlp", "an OTLP/HTTP endpoint that counts the spans it is sent"}},
		run: runLoadgenCmd},
	{name: "kfake", synopses: [][2]string{{"sluice kfake --addr ADDR", "the in-memory Kafka of \"sluice dev\" as a process of its own"}},
		run: runKfakeCmd},
	{name: "version", synopses: [][2]string{{"sluice version", "print the version, commit and build time of this binary (also --version, -v)"}},
		help: "usage: sluice version\n\nprints the module version, the commit (+dirty: built from a changed tree), the\ncommit's time, and the Go version and platform it was built with, from the\nbuild information the Go toolchain records (go build -buildvcs=false records\nno commit)\n",
		run:  runVersionCmd},
}

// commandLines are the usage text's list of commands, one synopsis a
// line, their descriptions aligned.
func commandLines() []string {
	width := 0
	for _, c := range commands {
		for _, s := range c.synopses {
			width = max(width, len(s[0]))
		}
	}
	var lines []string
	for _, c := range commands {
		for _, s := range c.synopses {
			lines = append(lines, fmt.Sprintf("%-*s  %s", width, s[0], s[1]))
		}
	}
	return lines
}

// usage is sluice's usage text.
var usage = func() string {
	var b strings.Builder
	b.WriteString("sluice: an ingestion gateway\n\nUsage:\n")
	for _, l := range commandLines() {
		b.WriteString("  " + l + "\n")
	}
	b.WriteString("\nRun \"sluice COMMAND -h\" for a command's flags.\n")
	return b.String()
}()

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

func helpFlag(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// helpAsked says whether args (c's arguments, after its name) ask for
// c's usage: a help flag first, or right after c's subcommand. A help
// flag further on is some flag's value (--actor -h), and a bare "help"
// may be an argument (hash-key help).
func (c command) helpAsked(args []string) bool {
	switch {
	case c.help == "":
		return false
	case len(args) >= 1 && helpFlag(args[0]):
		return true
	case len(args) >= 2 && helpFlag(args[1]):
		return c.subcommands
	}
	return false
}

// lookup is the command named name.
func lookup(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("give a command")
	}
	if c, ok := lookup(args[0]); ok {
		if c.helpAsked(args[1:]) {
			fmt.Fprint(stdout, c.help)
			return nil
		}
		return c.run(ctx, args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "-v", "-version", "--version":
		return runVersionCmd(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

// runSpoolCmd is `sluice spool inspect DIR`.
func runSpoolCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	if len(args) != 2 || args[0] != "inspect" {
		return errors.New("spool: usage: sluice spool inspect DIR")
	}
	report, err := buffer.Inspect(args[1])
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, report.String())
	return nil
}

const hashKeyUsage = `usage: sluice hash-key KEY
       sluice hash-key -

prints the hex sha256 of KEY, the form sources[].key_hashes takes. With -,
the key is read from standard input (one trailing newline is dropped), so
that it stays out of the shell's history and the process list:

  sluice hash-key - < key.txt
  printf %s "$KEY" | sluice hash-key -
`

// maxKeyBytes bounds a key read from standard input: an API key is a
// line, not a file.
const maxKeyBytes = 4096

// runHashKeyCmd is `sluice hash-key KEY|-`; "-" reads the key from stdin.
func runHashKeyCmd(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) != 1 {
		return errors.New("hash-key: give exactly one key, or - to read it from standard input")
	}
	key := args[0]
	if key == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, maxKeyBytes+1))
		if err != nil {
			return fmt.Errorf("hash-key: standard input: %w", err)
		}
		if len(b) > maxKeyBytes {
			return fmt.Errorf("hash-key: standard input: longer than %d bytes; an API key is one line", maxKeyBytes)
		}
		key = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if strings.ContainsAny(key, "\r\n") {
			return errors.New("hash-key: standard input holds more than one line; an API key is one line")
		}
		if key == "" {
			return errors.New("hash-key: standard input is empty: give the key on it, e.g. sluice hash-key - < key.txt")
		}
	}
	fmt.Fprintln(stdout, hashKey(key))
	return nil
}
