package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/contract"
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
func runCheckCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "path of the sluice YAML config (required)")
	role := fs.String("role", roleAll, "what to check the file for: gateway, consumer, or all (each command whose blocks the file has)")
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
