package contracttest_test

import (
	"testing"

	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/contract"
	"github.com/sluicehq/sluice/examples"
	"github.com/sluicehq/sluice/internal/contracttest"
)

func TestEvolveLoads(t *testing.T) {
	const typ = "examples.shop.v1.OrderPlaced"
	old, err := contract.Load(examples.Contracts, examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	next, err := contract.Load(contracttest.Evolve(t, examples.Contracts,
		contracttest.AddField(typ, "gift_wrap", 9, descriptorpb.FieldDescriptorProto_TYPE_BOOL),
		contracttest.RemoveField(typ, "note", true)), examples.Types)
	if err != nil {
		t.Fatal(err)
	}
	oc, _ := old.Lookup(typ)
	nc, _ := next.Lookup(typ)
	if oc.Fingerprint() == nc.Fingerprint() {
		t.Fatal("an evolved contract kept its fingerprint")
	}
	f := nc.Descriptor().Fields()
	if f.ByName("gift_wrap") == nil || f.ByName("gift_wrap").JSONName() != "giftWrap" || f.ByName("note") != nil ||
		!nc.Descriptor().ReservedNames().Has("note") || !nc.Descriptor().ReservedRanges().Has(8) {
		t.Fatalf("evolved descriptor: %v", nc.Descriptor())
	}
}
