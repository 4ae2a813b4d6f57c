package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/sluicehq/sluice/tools/loadgen"
)

// runLoadgenCmd is `sluice loadgen`: one bounded run against a target,
// `sluice loadgen serve-baseline`: a transport baseline to run against,
// and `sluice loadgen serve-otlp`: an OTLP/HTTP sink that counts spans.
func runLoadgenCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "serve-baseline" {
		return runServeBaseline(ctx, args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "serve-otlp" {
		return runServeOTLP(ctx, args[1:], stdout, stderr)
	}
	def := loadgen.NewDefaultConfig()
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := def
	fs.StringVar(&cfg.Target, "target", def.Target, "grpc (Publish), stream (PublishStream), rest (POST /v1/events), client (sluice's Go client, which batches and retries) or direct (franz-go to Kafka)")
	fs.StringVar(&cfg.Addr, "addr", def.Addr, "gRPC host:port (grpc, stream, client), REST host:port or URL, or comma-separated Kafka brokers (direct)")
	fs.StringVar(&cfg.APIKey, "key", def.APIKey, "API key of the source")
	fs.StringVar(&cfg.EventType, "type", def.EventType, "event type: "+loadgen.TypeOrderPlaced+" or "+loadgen.TypeLogLine)
	fs.StringVar(&cfg.Encoding, "encoding", def.Encoding, "payload encoding: json or binary (REST: json)")
	fs.IntVar(&cfg.EventsPerRequest, "events-per-request", def.EventsPerRequest, "events in each request")
	fs.IntVar(&cfg.EventBytes, "event-bytes", def.EventBytes, "approximate payload size in bytes, by padding a text field (0: the example as is)")
	fs.IntVar(&cfg.Keys, "keys", def.Keys, "distinct partition keys")
	fs.IntVar(&cfg.InvalidEvery, "invalid-every", def.InvalidEvery, "make every n-th event break a contract rule (0: none)")
	fs.IntVar(&cfg.Concurrency, "concurrency", def.Concurrency, "workers: requests in flight at most")
	fs.Float64Var(&cfg.Rate, "rate", def.Rate, "open loop at this many requests/s, latency from the intended send time (0: closed loop)")
	fs.Int64Var(&cfg.Requests, "requests", def.Requests, "stop after this many requests (0: no bound)")
	fs.Int64Var(&cfg.Events, "events", def.Events, "stop after this many events (0: no bound)")
	fs.DurationVar(&cfg.Duration, "duration", def.Duration, "stop after this long (always applies)")
	fs.DurationVar(&cfg.Timeout, "timeout", def.Timeout, "per-request deadline; no answer by then is a timeout")
	fs.IntVar(&cfg.Connections, "connections", def.Connections, "gRPC connections shared by the workers (client: the client's, requests round robin)")
	fs.BoolVar(&cfg.ClientStream, "client-stream", def.ClientStream, "client: publish over PublishStream (client.UseStream) instead of Publish")
	fs.BoolVar(&cfg.TLS.Enabled, "tls", false, "speak TLS to the gateway (grpc, stream, rest, client), verified by the system roots or --tls-ca")
	fs.StringVar(&cfg.TLS.CAFile, "tls-ca", "", "PEM CA bundle that signs the gateway's certificate (implies --tls)")
	fs.StringVar(&cfg.TLS.CertFile, "tls-cert", "", "client certificate (PEM), for a gateway that asks for one")
	fs.StringVar(&cfg.TLS.KeyFile, "tls-key", "", "the client certificate's key (PEM)")
	fs.StringVar(&cfg.TLS.ServerName, "tls-server-name", "", "the name to check in the gateway's certificate (default: the host of --addr)")
	fs.StringVar(&cfg.Topic, "topic", def.Topic, "topic for direct (default: the type's topic in --kafka-config's topics block, else ingest.<type>)")
	fs.StringVar(&cfg.RunID, "run-id", def.RunID, "prefix of the event ids (default: random)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	ledgerPath := fs.String("ledger", "", "append the id of every acknowledged event to this file, one per line")
	watchPID := fs.Int("watch-pid", 0, "report this process's CPU time and largest RSS over the run (Linux /proc)")
	kafkaConfig := fs.String("kafka-config", "", "direct: connect with this sluice config's kafka block (brokers, tls, sasl) instead of plaintext to --addr, and publish to the type's topic in its topics block")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kafkaConfig != "" {
		file, err := loadConfig(*kafkaConfig, nil, func(c fileConfig) error { return c.Kafka.Config.Validate() })
		if err != nil {
			return fmt.Errorf("loadgen: --kafka-config: %w", err)
		}
		cfg.Kafka = file.Kafka.Config
		if cfg.Topic == "" {
			// Where the gateway of that file would publish the type.
			cfg.Topic = file.topicOf(cfg.EventType)
		}
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("loadgen: unexpected argument %q", fs.Arg(0))
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	gen, err := loadgen.NewGenerator(cfg, time.Now)
	if err != nil {
		return err
	}
	target, err := loadgen.NewTarget(cfg, gen)
	if err != nil {
		return err
	}
	defer target.Close()
	var opts []loadgen.Option
	if *ledgerPath != "" {
		f, err := os.OpenFile(*ledgerPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("loadgen: --ledger: %w", err)
		}
		defer f.Close()
		opts = append(opts, loadgen.WithLedger(f))
	}
	if *watchPID > 0 {
		opts = append(opts, loadgen.WithWatchPID(*watchPID))
	}
	rep, runErr := loadgen.Run(ctx, cfg, gen, target, opts...)
	if rep != nil {
		var err error
		if *asJSON {
			err = rep.WriteJSON(stdout)
		} else {
			err = rep.WriteText(stdout)
		}
		runErr = errors.Join(runErr, err)
	}
	return runErr
}

func runServeBaseline(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen serve-baseline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", loadgen.BaselineHTTP, "http (read the body, answer 200) or grpc (IngestService answering ACCEPTED at once)")
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return loadgen.ServeBaseline(ctx, *kind, *addr, func(a net.Addr) {
		fmt.Fprintf(stdout, "baseline %s listening on %s\n", *kind, a)
	})
}

// runServeOTLP is `sluice loadgen serve-otlp`: an OTLP/HTTP trace receiver
// (protobuf, POST /v1/traces) that counts the spans it is sent, answers
// 200 and keeps nothing; GET /stats answers the counts as JSON, and they
// are printed as JSON when it stops (SIGINT or SIGTERM). The benchmark
// points a tracing gateway at it.
func runServeOTLP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadgen serve-otlp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("loadgen serve-otlp: unexpected argument %q", fs.Arg(0))
	}
	st, err := loadgen.ServeOTLP(ctx, *addr, func(a net.Addr) {
		fmt.Fprintf(stdout, "otlp sink listening on %s\n", a)
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(st)
}
