package dlq

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/sluicehq/sluice/contract"
	ct "github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/internal/eventtest"
)

// withRegion is value with eventtest.AddRegion's field set.
func withRegion(t testing.TB, value []byte) []byte { return eventtest.WithRegion(value, "eu_west_1") }

// TestCheckContractVersions: a record is checked against its own schema
// version when it is kept, else against the newest when the newest reads
// it without loss, rules included both ways; one the newest cannot read
// is an *UnknownVersionError, never checked against rules it was not
// published under.
func TestCheckContractVersions(t *testing.T) {
	v1 := testRegistry(t)
	v2 := eventtest.Evolved(t, eventtest.AddRegion())
	fp := func(r *contract.Registry) string {
		c, _ := r.Lookup(testType)
		return c.Fingerprint()
	}
	if fp(v1) == fp(v2) {
		t.Fatal("the evolved LogLine has the example's fingerprint")
	}
	onlyV1, err := contract.NewVersions(v1, 0)
	if err != nil {
		t.Fatal(err)
	}
	both, err := contract.NewVersions(v1, 0)
	if err != nil {
		t.Fatal(err)
	}
	both.Swap(v2)
	const unknown = "sha256:00000000000000000000000000000000"
	// What CheckContract says.
	const (
		ok        = "ok"
		unread    = "unknown version"  // *UnknownVersionError
		rules     = "rules broken"     // *contract.ViolationError
		malformed = "not its contract" // *contract.MalformedError
	)
	for _, tc := range []struct {
		name        string
		cs          Contracts
		fingerprint string
		value       []byte
		kept        bool
		want        string
	}{
		{"kept version", onlyV1, fp(v1), logLine(t), true, ok},
		{"kept version, rules broken", onlyV1, fp(v1), brokenLogLine(t), true, rules},
		{"unknown version the newest reads", onlyV1, fp(v2), logLine(t), false, ok},
		{"unknown version the newest reads, its rules broken", onlyV1, fp(v2), brokenLogLine(t), false, rules},
		{"unknown version setting a field the newest lacks", onlyV1, fp(v2), withRegion(t, logLine(t)), false, unread},
		{"unknown and broken: unreadable first", onlyV1, unknown, withRegion(t, brokenLogLine(t)), false, unread},
		{"unknown version, bad UTF-8", onlyV1, unknown, protowire.AppendString(protowire.AppendTag(logLine(t), 7, protowire.BytesType), "\xff"), false, unread},
		{"unknown version, a wrong wire type", onlyV1, unknown, protowire.AppendVarint(protowire.AppendTag(logLine(t), 3, protowire.VarintType), 1), false, unread},
		{"that version kept after a reload", both, fp(v2), withRegion(t, logLine(t)), true, ok},
		{"an older version still kept", both, fp(v1), logLine(t), true, ok},
		{"an older version still kept, a field it lacks", both, fp(v1), withRegion(t, logLine(t)), true, malformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := eventtest.VersionRecord(t, testTopic, "id", "k", tc.fingerprint, tc.value)
			err := CheckContract(tc.cs, rec)
			got := ok
			if _, is := errors.AsType[*UnknownVersionError](err); is {
				got = unread
			} else if _, is := errors.AsType[*contract.ViolationError](err); is {
				got = rules
			} else if _, is := errors.AsType[*contract.MalformedError](err); is {
				got = malformed
			} else if err != nil {
				t.Fatalf("CheckContract: %T %v", err, err)
			}
			if got != tc.want {
				t.Fatalf("CheckContract: %s (%v), want %s", got, err, tc.want)
			}
			c, kept, verr := Version(tc.cs, testType, tc.fingerprint, tc.value)
			if tc.want == unread {
				uve, _ := errors.AsType[*UnknownVersionError](verr)
				if c != nil || uve == nil || uve.Type != testType || uve.Fingerprint != tc.fingerprint || uve.Newest != fp(v1) || uve.Err == nil {
					t.Fatalf("Version: %v, %+v", c, verr)
				}
				return
			}
			if verr != nil || kept != tc.kept {
				t.Fatalf("Version: kept %v, %v; want kept %v", kept, verr, tc.kept)
			}
			if want, _ := tc.cs.Lookup(testType, tc.fingerprint); c != want {
				t.Errorf("Version reads with %s, want %s", c.Fingerprint(), want.Fingerprint())
			}
		})
	}
	if _, _, err := Version(onlyV1, "examples.nope.v1.Nope", fp(v1), logLine(t)); err == nil {
		t.Error("Version of a type never served")
	}
}

// TestCheckContractStructDepth: a record whose Struct nests as deep as the
// gateway's depth limit lets a JSON payload nest passes the check that
// drain and replay apply, whether it is read with its own version or with
// the newest, so it is not parked; one level deeper is refused as the
// gateway refuses it. A JSON level of google.protobuf.Struct is three
// levels of protobuf binary.
func TestCheckContractStructDepth(t *testing.T) {
	const attrs = 20
	reg := eventtest.Evolved(t, ct.AddImport(testType, "google/protobuf/struct.proto"),
		ct.AddMessageField(testType, "attrs", attrs, "google.protobuf.Struct"))
	cs, err := contract.NewVersions(reg, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := reg.Lookup(testType)
	// withAttrs is a valid LogLine whose attrs nest n JSON levels: the
	// LogLine's own object is level 1.
	withAttrs := func(n int) []byte {
		s := &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewNumberValue(1)}}
		for range n - 2 {
			s = &structpb.Struct{Fields: map[string]*structpb.Value{"a": structpb.NewStructValue(s)}}
		}
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return protowire.AppendBytes(protowire.AppendTag(logLine(t), attrs, protowire.BytesType), b)
	}
	const unknown = "sha256:00000000000000000000000000000000"
	for _, fingerprint := range []string{c.Fingerprint(), unknown} {
		for _, n := range []int{2, 12, contract.DefaultMaxDepth, contract.DefaultMaxDepth + 1} {
			err := CheckContract(cs, eventtest.VersionRecord(t, testTopic, "id", "k", fingerprint, withAttrs(n)))
			if n <= contract.DefaultMaxDepth {
				if err != nil {
					t.Errorf("version %s, attrs %d levels deep: %v", fingerprint, n, err)
				}
				continue
			}
			if _, ok := errors.AsType[*contract.MalformedError](err); !ok {
				if _, ok := errors.AsType[*UnknownVersionError](err); !ok || fingerprint != unknown {
					t.Errorf("version %s, attrs %d levels deep: %T %v, want it refused as malformed", fingerprint, n, err, err)
				}
			}
		}
	}
}
