package eventmap

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func validConfig() Config {
	return Config{
		ID:    Header("X-GitHub-Delivery"),
		Type:  TypeFrom(Header("X-GitHub-Event")),
		Types: map[string]string{"push": "github.v1.Push", "issues": "github.v1.Issues"},
	}
}

func TestConfigValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	fixed := Config{ID: Pointer("/id"), Type: FixedType("examples.shop.v1.OrderPlaced"), OccurredAt: Pointer("/at"), Payload: "/order"}
	if err := fixed.Validate(); err != nil {
		t.Fatalf("valid fixed-type config: %v", err)
	}
	for _, c := range []struct {
		field string
		edit  func(*Config)
	}{
		{"id", func(c *Config) { c.ID = Source{} }},
		{"id", func(c *Config) { c.ID = Pointer("id") }},
		{"id", func(c *Config) { c.ID = Pointer("/a~2") }},
		{"id", func(c *Config) { c.ID = Header("X Delivery") }},
		{"id", func(c *Config) { c.ID = Header("X-Delivery:") }},
		{"id", func(c *Config) { c.ID = Source{Pointer: "/id", Header: "X-Id"} }},
		{"type", func(c *Config) { c.Type = TypeSource{} }},
		{"type", func(c *Config) { c.Type = TypeFrom(Header("bad\nname")) }},
		{"type", func(c *Config) { c.Type = TypeSource{Contract: "a.B", From: Header("X-Event")} }},
		{"type", func(c *Config) { c.Type, c.Types = FixedType("shop..Order"), nil }},
		{"type", func(c *Config) { c.Type, c.Types = FixedType("1shop.Order"), nil }},
		{"type", func(c *Config) { c.Type, c.Types = FixedType("shop.Order-Placed"), nil }},
		{"type", func(c *Config) { c.Type, c.Types = FixedType(strings.Repeat("a", 201)), nil }},
		{"types", func(c *Config) { c.Type = FixedType("a.B") }},
		{"default_type", func(c *Config) { c.Type, c.Types, c.DefaultType = FixedType("a.B"), nil, "a.C" }},
		{"types", func(c *Config) { c.Types = nil }},
		{"types", func(c *Config) { c.Types = map[string]string{"": "a.B"} }},
		{"types", func(c *Config) { c.Types = map[string]string{"push": ""} }},
		{"types", func(c *Config) { c.Types = map[string]string{"push": "github push"} }},
		{"default_type", func(c *Config) { c.DefaultType = "github/Other" }},
		{"occurred_at", func(c *Config) { c.OccurredAt = Pointer("created") }},
		{"occurred_at", func(c *Config) { c.OccurredAt = Header("X-Time ") }},
		{"partition_key", func(c *Config) { c.PartitionKey = Header("Ключ") }},
		{"partition_key", func(c *Config) { c.PartitionKey = Source{Pointer: "/k", Header: "K"} }},
		{"payload", func(c *Config) { c.Payload = "data" }},
	} {
		cfg := validConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("want an error on %s, got %v", c.field, err)
		}
		if _, err := New(cfg); err == nil {
			t.Errorf("New takes a config Validate refuses on %s", c.field)
		}
	}
	// Only the type table makes a default type optional, and the other way round.
	cfg := validConfig()
	cfg.Types, cfg.DefaultType = nil, "github.v1.Event"
	if err := cfg.Validate(); err != nil {
		t.Errorf("a catch-all type alone: %v", err)
	}
}

// TestConfigYAML: a Source is a pointer or {pointer|header}, a type a
// contract type or a Source, and unknown keys are refused.
func TestConfigYAML(t *testing.T) {
	for _, c := range []struct {
		src  string
		want Config
	}{
		{"{id: /id, type: examples.shop.v1.OrderPlaced, occurred_at: /created_at, partition_key: /customer/id, payload: /order}",
			Config{ID: Pointer("/id"), Type: FixedType("examples.shop.v1.OrderPlaced"), OccurredAt: Pointer("/created_at"),
				PartitionKey: Pointer("/customer/id"), Payload: "/order"}},
		{"{id: {header: X-GitHub-Delivery}, type: {header: X-GitHub-Event}, types: {push: github.v1.Push}, default_type: github.v1.Event}",
			Config{ID: Header("X-GitHub-Delivery"), Type: TypeFrom(Header("X-GitHub-Event")),
				Types: map[string]string{"push": "github.v1.Push"}, DefaultType: "github.v1.Event"}},
		{"{id: {pointer: /id}, type: {pointer: /type}, types: {invoice.paid: stripe.v1.InvoicePaid}, occurred_at: {pointer: /created}, partition_key: {pointer: /data/object/customer}}",
			Config{ID: Pointer("/id"), Type: TypeFrom(Pointer("/type")), Types: map[string]string{"invoice.paid": "stripe.v1.InvoicePaid"},
				OccurredAt: Pointer("/created"), PartitionKey: Pointer("/data/object/customer")}},
		{"{id: /id, type: /kind, types: {order.placed: a.B}}",
			Config{ID: Pointer("/id"), Type: TypeFrom(Pointer("/kind")), Types: map[string]string{"order.placed": "a.B"}}},
		{"{id: /id, type: a.B, occurred_at: {header: X-Shopify-Triggered-At}}",
			Config{ID: Pointer("/id"), Type: FixedType("a.B"), OccurredAt: Header("X-Shopify-Triggered-At")}},
	} {
		var got Config
		dec := yaml.NewDecoder(strings.NewReader(c.src))
		dec.KnownFields(true)
		if err := dec.Decode(&got); err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if !equalConfig(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.src, got, c.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", c.src, err)
		}
	}
	for _, src := range []string{
		"{id: {pointer: /id, path: /x}, type: a.B}",
		"{id: {header: X-Id}, type: {headr: X-Type}}",
		"{id: [/id], type: a.B}",
		"{id: /id, type: a.B, typo: x}",
	} {
		var got Config
		dec := yaml.NewDecoder(strings.NewReader(src))
		dec.KnownFields(true)
		if err := dec.Decode(&got); err == nil {
			t.Errorf("%s: decoded as %+v, want an error", src, got)
		}
	}
}

func equalConfig(a, b Config) bool {
	return a.ID == b.ID && a.Type == b.Type && a.DefaultType == b.DefaultType && a.OccurredAt == b.OccurredAt &&
		a.PartitionKey == b.PartitionKey && a.Payload == b.Payload && len(a.Types) == len(b.Types) &&
		func() bool {
			for k, v := range a.Types {
				if b.Types[k] != v {
					return false
				}
			}
			return true
		}()
}

func TestContractTypes(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want []string
	}{
		{Config{Type: FixedType("a.B")}, []string{"a.B"}},
		{Config{Type: TypeFrom(Pointer("/t")), Types: map[string]string{"x": "a.C", "y": "a.B", "z": "a.C"}}, []string{"a.B", "a.C"}},
		{Config{Type: TypeFrom(Pointer("/t")), Types: map[string]string{"x": "a.C"}, DefaultType: "a.A"}, []string{"a.A", "a.C"}},
		{Config{Type: TypeFrom(Pointer("/t")), DefaultType: "a.A"}, []string{"a.A"}},
	} {
		if got := c.cfg.ContractTypes(); !slices.Equal(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.cfg, got, c.want)
		}
	}
}

// TestInherit: what a webhook source leaves unset comes from its scheme's
// defaults; what it sets stays.
func TestInherit(t *testing.T) {
	stripe := Config{ID: Pointer("/id"), Type: TypeFrom(Pointer("/type")), OccurredAt: Pointer("/created")}
	got := Config{Types: map[string]string{"invoice.paid": "stripe.v1.InvoicePaid"}, PartitionKey: Pointer("/data/object/customer")}.Inherit(stripe)
	want := Config{ID: Pointer("/id"), Type: TypeFrom(Pointer("/type")), OccurredAt: Pointer("/created"),
		Types: map[string]string{"invoice.paid": "stripe.v1.InvoicePaid"}, PartitionKey: Pointer("/data/object/customer")}
	if !equalConfig(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// A source's own type and catch-all are kept, and a fixed type takes
	// no table from the defaults.
	withTable := Config{ID: Pointer("/id"), Type: TypeFrom(Pointer("/type")), Types: map[string]string{"a": "x.A"}, DefaultType: "x.Any"}
	got = Config{Type: FixedType("x.Fixed")}.Inherit(withTable)
	if got.Type != FixedType("x.Fixed") || got.Types != nil || got.DefaultType != "" || got.ID != Pointer("/id") {
		t.Errorf("fixed type over a table: %+v", got)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
	got = Config{DefaultType: "x.Mine"}.Inherit(withTable)
	if got.DefaultType != "x.Mine" || got.Types != nil {
		t.Errorf("own catch-all: %+v", got)
	}
}
