package contract_test

import (
	"testing"

	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
)

// TestVersionsKeep: each swap makes the new contract the newest version,
// a fingerprint swapped in again is not kept twice, and a type keeps at
// most keep versions.
func TestVersionsKeep(t *testing.T) {
	const typ = "examples.shop.v1.OrderPlaced"
	load := func(image []byte) *contract.Registry {
		r, err := contract.Load(image, examples.Types)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	fp := func(r *contract.Registry) string { c, _ := r.Lookup(typ); return c.Fingerprint() }
	v1 := load(examples.Contracts)
	v2 := load(contracttest.Evolve(t, examples.Contracts, contracttest.AddField(typ, "a", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL)))
	v3 := load(contracttest.Evolve(t, examples.Contracts, contracttest.AddField(typ, "b", 10, descriptorpb.FieldDescriptorProto_TYPE_BOOL)))
	if _, err := contract.NewVersions(v1, contract.MaxKeepVersions+1); err == nil {
		t.Fatal("NewVersions took a keep over the bound")
	}
	vs, err := contract.NewVersions(v1, 2)
	if err != nil {
		t.Fatal(err)
	}
	history := func() (fps []string) {
		for _, c := range vs.History(typ) {
			fps = append(fps, c.Fingerprint())
		}
		return fps
	}
	if prev := vs.Swap(v2); prev != v1 || vs.Registry() != v2 {
		t.Fatal("Swap did not serve v2 and return v1")
	}
	if h := history(); len(h) != 2 || h[0] != fp(v2) || h[1] != fp(v1) {
		t.Fatalf("history after v2: %v", h)
	}
	if c, ok := vs.Lookup(typ, fp(v1)); !ok || c.Fingerprint() != fp(v1) {
		t.Fatal("v1 is not found by its fingerprint after the swap")
	}
	vs.Swap(v1) // a rollback: v1 is the newest again, once
	if h := history(); len(h) != 2 || h[0] != fp(v1) || h[1] != fp(v2) {
		t.Fatalf("history after the rollback: %v", h)
	}
	vs.Swap(v3)
	if h := history(); len(h) != 2 || h[0] != fp(v3) || h[1] != fp(v1) {
		t.Fatalf("history after v3, keeping 2: %v", h)
	}
	if c, ok := vs.Lookup(typ, fp(v2)); ok || c.Fingerprint() != fp(v3) {
		t.Fatalf("a version no longer kept: Lookup = %v, %v; want the newest and false", c.Fingerprint(), ok)
	}
	if c, ok := vs.Lookup("no.such.Type", fp(v3)); ok || c != nil {
		t.Fatal("Lookup of a type never served found one")
	}
	// Other types' histories are theirs: the log contract did not change.
	if h := vs.History("examples.logs.v1.LogLine"); len(h) != 1 {
		t.Fatalf("LogLine kept %d versions of one fingerprint", len(h))
	}
}
