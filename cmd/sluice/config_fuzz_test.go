package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pull"
)

// FuzzParseConfig: any bytes parse to a config or an error, never a
// panic; a file with gateway.topics is refused naming it; and a file with
// both roles that passes the topic checks has a consumer that reads the
// topic of every type a source or poller may publish, and pollers that
// share no source unless share_source says so. Only the checks that read
// no file run: the fuzzer may name any path.
func FuzzParseConfig(f *testing.F) {
	if example, err := os.ReadFile("../../deploy/sluice.example.yaml"); err == nil {
		f.Add(example)
	}
	for _, seed := range []string{
		"",
		"topics: {a: t}\ncontracts: {types: [a, b]}\nsources: [{name: s, event_types: ['*']}]\nconsumer: {event_types: [a]}\n",
		"topics: {a: t}\ncontracts: {types: [a]}\nsources: [{name: s, event_types: [a]}]\nconsumer: {topics: [ingest.a]}\n",
		"gateway: {topics: {a: t}}\n",
		"gateway:\n  topics:\n",
		"contracts: {types: [a]}\nsources: [{name: s}]\npollers: [{name: s, url: 'https://p/x?c={cursor}', pagination: {cursor: /n}, mapping: {id: /id, type: a}}]\nsink: {}\n",
	} {
		f.Add([]byte(seed))
	}
	ownChecks := func(c fileConfig) error {
		if err := c.validateTopics(); err != nil {
			return err
		}
		for _, p := range c.Pollers {
			if err := p.Validate(); err != nil {
				return err
			}
		}
		if err := c.checkPollerSources(); err != nil {
			return err
		}
		if c.roles.gateway && c.roles.consumer {
			return c.checkConsumerReads()
		}
		return nil
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cfg, err := parseConfig(raw, nil, ownChecks)
		roles, rolesErr := rolesOf(raw)
		if rolesErr != nil {
			if err == nil || !strings.Contains(err.Error(), "gateway.topics") {
				t.Fatalf("gateway.topics refused by rolesOf (%v) but parseConfig says %v", rolesErr, err)
			}
			return
		}
		if err != nil {
			return
		}
		if roles != cfg.roles {
			t.Fatalf("roles %+v, parsed %+v", roles, cfg.roles)
		}
		if !roles.gateway || !roles.consumer {
			return
		}
		cc := consumerConfig(cfg)
		reads := cc.SourceTopics()
		may := func(typ string) bool {
			for _, s := range cfg.Gateway.Sources {
				if slices.Contains(s.EventTypes, "*") || slices.Contains(s.EventTypes, typ) {
					return true
				}
			}
			return slices.ContainsFunc(cfg.Pollers, func(p pull.Config) bool { return slices.Contains(p.Mapping.ContractTypes(), typ) })
		}
		for _, typ := range cfg.Contracts.Types {
			if may(typ) && !slices.Contains(reads, cfg.topicOf(typ)) {
				t.Fatalf("accepted: %s goes to %s, which the consumer (%v) does not read", typ, cfg.topicOf(typ), reads)
			}
		}
		seen := map[string]bool{}
		for _, s := range cfg.Gateway.Sources {
			seen[s.Name] = true
		}
		for i, p := range cfg.Pollers {
			if seen[p.SourceName()] && !p.ShareSource {
				t.Fatalf("accepted: pollers[%d] shares source %q without share_source", i, p.SourceName())
			}
			seen[p.SourceName()] = true
		}
	})
}
