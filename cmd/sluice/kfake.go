package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/record"
)

// runKfakeCmd is `sluice kfake`: the in-memory Kafka of `sluice dev` as a
// process of its own (so a benchmark can give it its own CPU), with a topic
// per example contract, until ctx ends.
func runKfakeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kfake", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address; the host must be 127.0.0.1 (kfake listens on loopback only)")
	partitions := fs.Int("partitions", 3, "partitions per topic")
	if err := parseFlags(fs, args, stdout, stderr, "usage: sluice kfake [--addr ADDR] [--partitions N]\n\nRuns the in-memory Kafka of \"sluice dev\", with a topic per example contract.\n", ""); err != nil {
		return err
	}
	host, portText, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("kfake: --addr: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 0 || port > 65535 {
		return fmt.Errorf("kfake: --addr: port %q is not a port number", portText)
	}
	if host != "127.0.0.1" {
		return fmt.Errorf("kfake: --addr: host %q: kfake listens on 127.0.0.1 only", host)
	}
	if *partitions < 1 || *partitions > 1000 {
		return fmt.Errorf("kfake: --partitions: %d is not in [1, 1000]", *partitions)
	}
	topics := record.TopicsOf(nil, examples.Types)
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port),
		kfake.SeedTopics(int32(*partitions), topics...))
	if err != nil {
		return fmt.Errorf("kfake: %w", err)
	}
	defer cluster.Close()
	fmt.Fprintf(stdout, "kfake listening on %s\n", cluster.ListenAddrs()[0])
	<-ctx.Done()
	return nil
}
