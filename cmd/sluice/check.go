package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/publish"
	"github.com/sluicehq/sluice/record"
)

// Roles that check validates a config for.
const (
	roleGateway  = "gateway"
	roleConsumer = "consumer"
	roleAll      = "all"
)

// runCheckCmd is `sluice check --config FILE`: everything start-up would
// refuse, without starting anything or opening a connection. It reads
// every file the config names (contracts, certificates and keys, password
// files), parses the certificates and matches them to their keys, loads
// the contracts and checks each command's blocks. A bad config exits
// non-zero with the field path of the first wrong value.
//
// With --kafka it then connects to kafka.brokers and prints a warning for
// each topic the file uses whose settings cannot keep an acknowledged
// event through a broker's loss (publish.CheckDurability). Warnings leave
// the exit status 0; a cluster that does not answer is an error.
func runCheckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path of the sluice YAML config (required)")
	role := fs.String("role", roleAll, "what to check the file for: gateway, consumer, or all (each command whose blocks the file has)")
	kafkaWait := fs.Duration("kafka-timeout", kafkaCheckTimeout, "with --kafka, how long to wait for the cluster's answers")
	withKafka := fs.Bool("kafka", false, "then ask kafka.brokers how each topic the file uses is replicated, and warn of each whose settings cannot keep an acknowledged event through a broker's loss (min.insync.replicas, replication factor, unclean leader election)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *path == "" {
		fs.Usage()
		return errors.New("check: --config is required")
	}
	raw, err := os.ReadFile(*path)
	if err != nil {
		return err
	}
	roles, err := checkRoles(*path, raw, *role)
	if err != nil {
		return err
	}
	for _, r := range roles {
		summary, err := checkRole(*path, raw, r)
		if err != nil {
			// The error names the file, and the place in it.
			return fmt.Errorf("%s: %w", r, err)
		}
		fmt.Fprintf(stdout, "%s: %s: ok (%s)\n", *path, r, summary)
	}
	if *withKafka {
		return checkTopicDurability(ctx, *path, raw, roles, *kafkaWait, stdout, stderr)
	}
	return nil
}

// checkTopicDurability is check --kafka: the topics of every role checked
// (record.Cluster of their source topics: the audit topic, and each source
// topic with its DLQ and parked topics), asked of the cluster the file's
// kafka block connects to. Each weakness is a line "FILE: kafka: warning:
// ...", then one line sums them up.
func checkTopicDurability(ctx context.Context, path string, raw []byte, roles []string, wait time.Duration, stdout, stderr io.Writer) error {
	var sources []string
	var cfg fileConfig
	for _, r := range roles {
		validate := fileConfig.validate
		if r == roleConsumer {
			validate = fileConfig.validateConsumer
		}
		var err error
		if cfg, err = parseConfigFile(path, raw, osGetenv, validate); err != nil {
			return err
		}
		topics := cfg.topics()
		if r == roleConsumer {
			cc := consumerConfig(cfg)
			topics = cc.SourceTopics()
		}
		for _, t := range topics {
			if !slices.Contains(sources, t) {
				sources = append(sources, t)
			}
		}
	}
	topics := record.Cluster(sources)
	conn, err := cfg.Kafka.Options(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return inFile(path, nil, fmt.Errorf("config: %w", err))
	}
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		return fmt.Errorf("check: kafka client: %w", err)
	}
	defer cl.Close()
	kctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	weak, err := publish.CheckDurability(kctx, kadm.NewClient(cl), topics)
	if err != nil {
		return fmt.Errorf("check: kafka at %s: %w", strings.Join(cfg.Kafka.Brokers, ","), err)
	}
	for _, w := range weak {
		fmt.Fprintf(stdout, "%s: kafka: warning: %s\n", path, w)
	}
	if len(weak) == 0 {
		fmt.Fprintf(stdout, "%s: kafka: ok (%d topics, each replicated to keep an acknowledged event through a broker's loss)\n", path, len(topics))
		return nil
	}
	plural := "s"
	if len(weak) == 1 {
		plural = ""
	}
	fmt.Fprintf(stdout, "%s: kafka: %d topics, %d warning%s\n", path, len(topics), len(weak), plural)
	return nil
}

// checkRoles are the roles to check: the one asked for, or with "all"
// the gateway when the file has sources or pollers and the consumer when
// it has a consumer or sink block. A file with both is checked for each,
// and each check holds the consumer to reading every topic the gateway
// publishes to.
func checkRoles(path string, raw []byte, role string) ([]string, error) {
	switch role {
	case roleGateway, roleConsumer:
		return []string{role}, nil
	case roleAll:
	default:
		return nil, fmt.Errorf("check: --role: %q is not gateway, consumer or all", role)
	}
	var top map[string]any
	if err := yaml.NewDecoder(bytes.NewReader(raw)).Decode(&top); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(path, err)
	}
	has, err := rolesOf(raw)
	if err != nil {
		return nil, inFile(path, nil, err)
	}
	var roles []string
	if has.gateway {
		roles = append(roles, roleGateway)
	}
	if has.consumer {
		roles = append(roles, roleConsumer)
	}
	if len(roles) == 0 {
		return nil, errors.New("check: the file has neither sources or pollers (gateway) nor a consumer or sink block (consumer); give --role")
	}
	return roles, nil
}

// checkRole validates the file as the command of role would at start,
// and loads its contracts.
func checkRole(path string, raw []byte, role string) (string, error) {
	validate := fileConfig.validate
	if role == roleConsumer {
		validate = fileConfig.validateConsumer
	}
	cfg, err := parseConfigFile(path, raw, osGetenv, validate)
	if err != nil {
		return "", err
	}
	set, err := os.ReadFile(cfg.Contracts.DescriptorSet)
	if err != nil {
		return "", inFile(path, nil, fmt.Errorf("config: contracts.descriptor_set: %w", err))
	}
	registry, err := contract.Load(set, cfg.Contracts.Types, contract.WithMaxDepth(cfg.Gateway.Limits.MaxDepth))
	if err != nil {
		return "", inFile(path, nil, fmt.Errorf("config: contracts: %w", err))
	}
	types := registry.Types()
	if role == roleConsumer {
		cc := consumerConfig(cfg)
		return fmt.Sprintf("%d contract types, topics %s, sink %s", len(types),
			strings.Join(cc.SourceTopics(), ","), cfg.Sink.Kind), nil
	}
	return fmt.Sprintf("%d sources, %d pollers, %d contract types", len(cfg.Gateway.Sources), len(cfg.Pollers), len(types)), nil
}
