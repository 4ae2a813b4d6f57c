package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"buf.build/gen/go/bufbuild/protovalidate/protocolbuffers/go/buf/validate"
	ce "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/event"
	cehttp "github.com/cloudevents/sdk-go/v2/protocol/http"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	stripewebhook "github.com/stripe/stripe-go/v82/webhook"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/sluicehq/sluice/consumer/trace"
	"github.com/sluicehq/sluice/examples"
	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
	"github.com/sluicehq/sluice/internal/contracttest"
	"github.com/sluicehq/sluice/internal/kafkatest"
	"github.com/sluicehq/sluice/internal/waitfor"
	"github.com/sluicehq/sluice/record"
)

// Real senders, end to end. Deliveries are signed by the providers' own
// libraries (stripe-go, the Go Standard Webhooks library, and with the
// opt-in variables npm's @octokit/webhooks-methods and PyPI's
// standardwebhooks and stripe) or, where a provider has no library that
// signs, by its documented recipe with Go's crypto, checked first against
// the provider's documented vector (GitHub, Shopify). CloudEvents are sent
// by the CloudEvents Go SDK's HTTP client. They go through `sluice
// gateway` and `sluice consumer` (kfake, SQLite), wired as `sluice dev`
// wires them, and `sluice trace` is asked where each one is.
//
// The sources and their contracts, chosen to be what such senders send:
//   - stripe (scheme stripe): Stripe's event object as Stripe delivers it,
//     every Stripe type to examples.stripe.v1.Event (default_type), with
//     allow_unknown_fields, keyed by the object's customer;
//   - platform (scheme standard): a shop platform of one's own that signs
//     with Standard Webhooks, in the payload structure the spec
//     recommends ({"type", "timestamp", "data"}): type order.placed to
//     examples.shop.v1.OrderPlaced, the contract's JSON under /data;
//   - github (scheme github): a push event in the shape of GitHub's
//     documented push payload (fewer fields, nested objects and nulls
//     included), to e2e.github.v1.Push, a contract of this test's (no
//     example contract fits GitHub's payloads) that names a few of its
//     fields, with allow_unknown_fields;
//   - shopify (scheme shopify, secret from the environment): an
//     orders/create payload in the shape of Shopify's documented example,
//     to e2e.shopify.v1.Order, likewise the test's own contract;
//   - telemetry (API key): CloudEvents to POST /v1/cloudevents, through
//     the source's types table to examples.logs.v1.LogLine and
//     examples.identity.v1.UserProfileUpdated, with kafka_headers.

// The senders' secrets, each as its provider spells one.
const (
	sendersStripeSecret   = "whsec_e2e_7f3c1a9d5b2e4c60"
	sendersStandardSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD" // base64 of 24 bytes, as Standard Webhooks' secrets are
	sendersGitHubSecret   = "e2e: it's a secret to everybody"
	sendersShopifySecret  = "e2e-shopify-client-secret"
	sendersCEKey          = "e2e-telemetry-key"
	// sendersShopifyEnv holds the Shopify secret: that source reads it
	// from the environment (secret_env), the others from files.
	sendersShopifyEnv = "SLUICE_E2E_SHOPIFY_SECRET"
)

// The contract types the senders' events land as.
const (
	sendersPushType    = "e2e.github.v1.Push"
	sendersOrderType   = "e2e.shopify.v1.Order"
	sendersPlacedType  = "examples.shop.v1.OrderPlaced"
	sendersLogType     = "examples.logs.v1.LogLine"
	sendersProfileType = "examples.identity.v1.UserProfileUpdated"
)

// sendersLimits are the webhook sources' pre-authentication bounds and
// the gateway's batch limit; zero values leave the defaults.
type sendersLimits struct {
	maxBody     int
	preauth     int64
	readTimeout time.Duration
	maxEvents   int
}

// sendersWorld is a gateway and a consumer tier, each a sluice command run
// in this process, on an in-process Kafka, into an SQLite sink.
type sendersWorld struct {
	brokers []string
	// httpAddr is the gateway's REST listener; gatewayAdmin its admin
	// listener (/metrics).
	httpAddr, gatewayAdmin string
	// consumerConfig is the consumer's config file, which sluice trace
	// reads too.
	consumerConfig string
	sink           *sql.DB
	topics         []string // the event types' topics
}

// startSenders starts the world with the sources described above.
func startSenders(t *testing.T, l sendersLimits) *sendersWorld {
	t.Helper()
	dir := t.TempDir()
	image := filepath.Join(dir, "contracts.binpb")
	if err := os.WriteFile(image, contracttest.Evolve(t, examples.Contracts, addSenderContracts), 0o600); err != nil {
		t.Fatal(err)
	}
	types := append(slices.Clone(examples.Types), examples.StripeEventType, sendersPushType, sendersOrderType)
	w := &sendersWorld{}
	for _, typ := range types {
		w.topics = append(w.topics, record.EventTopic(typ))
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, record.Cluster(w.topics)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	w.brokers = cluster.ListenAddrs()
	secret := func(name, value string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv(sendersShopifyEnv, sendersShopifySecret)

	// Each webhook block ends with the limits the test sets.
	var bounds []string
	if l.maxBody > 0 {
		bounds = append(bounds, fmt.Sprintf("max_body_bytes: %d", l.maxBody))
	}
	if l.preauth > 0 {
		bounds = append(bounds, fmt.Sprintf("preauth_memory_bytes: %d", l.preauth))
	}
	if l.readTimeout > 0 {
		bounds = append(bounds, fmt.Sprintf("read_timeout: %s", l.readTimeout))
	}
	limits := ""
	for _, b := range bounds {
		limits += "\n      " + b
	}
	maxEvents := ""
	if l.maxEvents > 0 {
		maxEvents = fmt.Sprintf("\n  limits: {max_events_per_request: %d}", l.maxEvents)
	}
	common := fmt.Sprintf("contracts: {descriptor_set: %s, types: [%s]}\nkafka: {brokers: [%s]}\nlog: {level: warn}\n",
		image, strings.Join(types, ", "), strings.Join(w.brokers, ", "))
	startListening(t, time.Minute, "the gateway's /readyz to answer 200", func() ([]string, func() bool) {
		w.httpAddr, w.gatewayAdmin = freePort(t), freePort(t)
		config := writeConfig(t, fmt.Sprintf(`gateway:
  grpc_addr: %[1]s
  http_addr: %[2]s%[3]s
sources:
  - name: stripe
    event_types: [%[4]s]
    webhook:
      scheme: stripe
      secret_files: [%[5]s]
      mapping: {default_type: %[4]s, partition_key: /data/object/customer}
      allow_unknown_fields: [%[4]s]%[6]s
  - name: platform
    event_types: [%[7]s]
    webhook:
      scheme: standard
      secret_files: [%[8]s]
      mapping:
        types: {order.placed: %[7]s}
        payload: /data
        occurred_at: /timestamp
        partition_key: /data/customer/customer_id%[6]s
  - name: github
    event_types: [%[9]s]
    webhook:
      scheme: github
      secret_files: [%[10]s]
      mapping: {types: {push: %[9]s}, partition_key: /repository/full_name}
      allow_unknown_fields: [%[9]s]%[6]s
  - name: shopify
    event_types: [%[11]s]
    webhook:
      scheme: shopify
      secret_env: [%[12]s]
      mapping: {types: {orders/create: %[11]s}, partition_key: /customer/id}
      allow_unknown_fields: [%[11]s]%[6]s
  - name: telemetry
    key_hashes: [%[13]s]
    event_types: [%[14]s, %[15]s]
    cloudevents:
      types: {com.example.log: %[14]s, com.example.profile.updated: %[15]s}
      kafka_headers: true
spool: {dir: %[16]s, min_free_bytes: 1}
admin: {addr: %[17]s}
%[18]s`, freePort(t), w.httpAddr, maxEvents,
			examples.StripeEventType, secret("stripe-whsec", sendersStripeSecret), limits,
			sendersPlacedType, secret("platform-whsec", sendersStandardSecret),
			sendersPushType, secret("github-secret", sendersGitHubSecret),
			sendersOrderType, sendersShopifyEnv,
			hashKey(sendersCEKey), sendersLogType, sendersProfileType,
			filepath.Join(dir, "spool"), w.gatewayAdmin, common))
		return []string{"gateway", "--config", config}, func() bool {
			code, _ := adminGet(t, w.gatewayAdmin, "/readyz")
			return code == http.StatusOK
		}
	})
	sinkPath := filepath.Join(dir, "events.db")
	group := fmt.Sprintf("senders-%x", time.Now().UnixNano())
	startListening(t, time.Minute, "the consumer's /readyz to answer 200", func() ([]string, func() bool) {
		admin := freePort(t)
		w.consumerConfig = writeConfig(t, fmt.Sprintf(`consumer: {group: %s, commit_interval: 50ms, lag_interval: 50ms}
sink: {kind: sqlite, sqlite: {path: %s, busy_timeout: 200ms}}
admin: {addr: %s}
%s`, group, sinkPath, admin, common))
		return []string{"consumer", "--config", w.consumerConfig}, func() bool {
			code, _ := adminGet(t, admin, "/readyz")
			return code == http.StatusOK
		}
	})
	// The consumer made the file and its table before it was ready.
	w.sink = openSink(t, sinkPath)
	t.Cleanup(func() { w.sink.Close() })
	return w
}

// addSenderContracts adds the test's contracts of GitHub's push event and
// Shopify's order to the example contracts: each names a few of the
// payload's fields, with rules, and the sources allow the rest.
func addSenderContracts(t testing.TB, set *descriptorpb.FileDescriptorSet) {
	t.Helper()
	const (
		str   = descriptorpb.FieldDescriptorProto_TYPE_STRING
		i64   = descriptorpb.FieldDescriptorProto_TYPE_INT64
		boolT = descriptorpb.FieldDescriptorProto_TYPE_BOOL
		msg   = descriptorpb.FieldDescriptorProto_TYPE_MESSAGE
	)
	strRules := func(b validate.StringRules_builder) *validate.FieldRules {
		return validate.FieldRules_builder{String: b.Build()}.Build()
	}
	positive := validate.FieldRules_builder{Int64: validate.Int64Rules_builder{Gt: proto.Int64(0)}.Build()}.Build()
	sha := strRules(validate.StringRules_builder{Pattern: proto.String("^[0-9a-f]{40}$")})
	file := func(path, pkg string, msgs ...*descriptorpb.DescriptorProto) *descriptorpb.FileDescriptorProto {
		return &descriptorpb.FileDescriptorProto{
			Name: proto.String(path), Package: proto.String(pkg), Syntax: proto.String("proto3"),
			Dependency: []string{"buf/validate/validate.proto"}, MessageType: msgs,
		}
	}
	set.File = append(set.File,
		file("e2e/github/v1/push.proto", "e2e.github.v1",
			descMessage("Push",
				descField("ref", 1, str, "", false, strRules(validate.StringRules_builder{Prefix: proto.String("refs/")})),
				descField("before", 2, str, "", false, sha),
				descField("after", 3, str, "", false, sha),
				descField("repository", 4, msg, ".e2e.github.v1.Repository", false, validate.FieldRules_builder{Required: proto.Bool(true)}.Build()),
				descField("pusher", 5, msg, ".e2e.github.v1.Pusher", false, nil),
				descField("forced", 6, boolT, "", false, nil),
				descField("compare", 7, str, "", false, nil)),
			descMessage("Repository",
				descField("id", 1, i64, "", false, positive),
				descField("full_name", 2, str, "", false, strRules(validate.StringRules_builder{MinLen: proto.Uint64(3)})),
				descField("private", 3, boolT, "", false, nil),
				descField("html_url", 4, str, "", false, nil)),
			descMessage("Pusher",
				descField("name", 1, str, "", false, nil),
				descField("email", 2, str, "", false, nil))),
		file("e2e/shopify/v1/order.proto", "e2e.shopify.v1",
			descMessage("Order",
				descField("id", 1, i64, "", false, positive),
				descField("email", 2, str, "", false, nil),
				descField("created_at", 3, str, "", false, nil),
				descField("currency", 4, str, "", false, strRules(validate.StringRules_builder{Pattern: proto.String("^[A-Z]{3}$")})),
				descField("total_price", 5, str, "", false, strRules(validate.StringRules_builder{Pattern: proto.String(`^[0-9]+\.[0-9]{2}$`)})),
				descField("line_items", 6, msg, ".e2e.shopify.v1.LineItem", true,
					validate.FieldRules_builder{Repeated: validate.RepeatedRules_builder{MinItems: proto.Uint64(1)}.Build()}.Build()),
				descField("customer", 7, msg, ".e2e.shopify.v1.Customer", false, nil)),
			descMessage("LineItem",
				descField("id", 1, i64, "", false, nil),
				descField("sku", 2, str, "", false, nil),
				descField("quantity", 3, i64, "", false, validate.FieldRules_builder{Int64: validate.Int64Rules_builder{Gte: proto.Int64(1)}.Build()}.Build()),
				descField("price", 4, str, "", false, nil),
				descField("title", 5, str, "", false, nil)),
			descMessage("Customer",
				descField("id", 1, i64, "", false, nil),
				descField("email", 2, str, "", false, nil))))
}

func descMessage(name string, fields ...*descriptorpb.FieldDescriptorProto) *descriptorpb.DescriptorProto {
	return &descriptorpb.DescriptorProto{Name: proto.String(name), Field: fields}
}

// descField is a proto3 field without presence; typeName names a message
// type; rules are its protovalidate rules (nil: none).
func descField(name string, number int32, typ descriptorpb.FieldDescriptorProto_Type, typeName string, repeated bool,
	rules *validate.FieldRules) *descriptorpb.FieldDescriptorProto {
	label := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL
	if repeated {
		label = descriptorpb.FieldDescriptorProto_LABEL_REPEATED
	}
	f := &descriptorpb.FieldDescriptorProto{
		Name: proto.String(name), JsonName: proto.String(camel(name)), Number: proto.Int32(number),
		Label: label.Enum(), Type: typ.Enum(),
	}
	if typeName != "" {
		f.TypeName = proto.String(typeName)
	}
	if rules != nil {
		f.Options = &descriptorpb.FieldOptions{}
		proto.SetExtension(f.Options, validate.E_Field, rules)
	}
	return f
}

// camel is protoc's default json_name of a field: lowerCamelCase.
func camel(name string) string {
	var b strings.Builder
	up := false
	for _, r := range name {
		switch {
		case r == '_':
			up = true
		case up && 'a' <= r && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
			up = false
		default:
			b.WriteRune(r)
			up = false
		}
	}
	return b.String()
}

// sendersAnswer is the gateway's answer to one request: per-event results,
// or a whole-request failure.
type sendersAnswer struct {
	code    int
	header  http.Header
	raw     string
	results []*ingestv1.EventResult
	failure *ingestv1.ErrorBody
}

func parseSendersAnswer(t *testing.T, code int, h http.Header, body []byte) sendersAnswer {
	t.Helper()
	a := sendersAnswer{code: code, header: h, raw: string(body)}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(body, &probe); err != nil {
		t.Fatalf("answer %d is not JSON: %v\n%s", code, err, body)
	}
	lax := protojson.UnmarshalOptions{DiscardUnknown: true}
	if _, ok := probe["results"]; ok {
		var pr ingestv1.PublishResponse
		if err := lax.Unmarshal(body, &pr); err != nil {
			t.Fatalf("answer %d: %v\n%s", code, err, body)
		}
		a.results = pr.GetResults()
		return a
	}
	a.failure = new(ingestv1.ErrorBody)
	if err := lax.Unmarshal(body, a.failure); err != nil {
		t.Fatalf("answer %d: %v\n%s", code, err, body)
	}
	return a
}

// reason is the whole failure's reason, or that of the refused events
// when they share one; REASON_UNSPECIFIED otherwise.
func (a sendersAnswer) reason() ingestv1.Reason {
	if a.failure != nil {
		return a.failure.GetReason()
	}
	var r ingestv1.Reason
	for _, res := range a.results {
		if rej := res.GetRejection(); rej != nil {
			if r != ingestv1.Reason_REASON_UNSPECIFIED && rej.GetReason() != r {
				return ingestv1.Reason_REASON_UNSPECIFIED
			}
			r = rej.GetReason()
		}
	}
	return r
}

// outcomes checks that the answer is 200 with one result per id, in
// order, each with outcome want.
func (a sendersAnswer) outcomes(ids []string, want ingestv1.Outcome) error {
	if a.code != http.StatusOK || len(a.results) != len(ids) {
		return fmt.Errorf("%d with %d results, want 200 with %d %s", a.code, len(a.results), len(ids), want)
	}
	for i, r := range a.results {
		if r.GetOutcome() != want || r.GetId() != ids[i] || int(r.GetIndex()) != i {
			return fmt.Errorf("result %d: %v, want %s of %s", i, r, want, ids[i])
		}
	}
	return nil
}

// post sends body to path with header h and reads the answer.
func (w *sendersWorld) post(t *testing.T, path string, h http.Header, body []byte) sendersAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+w.httpAddr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h.Clone()
	return w.do(t, req)
}

func (w *sendersWorld) do(t *testing.T, req *http.Request) sendersAnswer {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return parseSendersAnswer(t, resp.StatusCode, resp.Header, body)
}

// webhook is a sender of one signed delivery to a webhook source: each
// call sends it as it is, as a provider's retry does.
func (w *sendersWorld) webhook(source string, h http.Header, body []byte) func(t *testing.T) sendersAnswer {
	h = h.Clone()
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	return func(t *testing.T) sendersAnswer { return w.post(t, "/v1/webhooks/"+source, h, body) }
}

// landed is an event in the sink and the Kafka record its row names.
type landed struct {
	typ, key string
	payload  string // the row's JSON of the message
	rec      *kgo.Record
}

// acceptOnce sends a delivery twice with send and checks that sluice takes
// its events, ids, once: ACCEPTED, then DUPLICATE, each answered 200; one
// row each in the sink, one record each in Kafka, which the row names;
// and sluice trace finds each IN_SINK.
func (w *sendersWorld) acceptOnce(t *testing.T, source, typ string, ids []string, send func(t *testing.T) sendersAnswer) []landed {
	t.Helper()
	for _, want := range []ingestv1.Outcome{ingestv1.Outcome_ACCEPTED, ingestv1.Outcome_DUPLICATE} {
		if a := send(t); a.outcomes(ids, want) != nil {
			t.Fatalf("sent as %s: %v\n%s", want, a.outcomes(ids, want), a.raw)
		}
	}
	var out []landed
	for _, id := range ids {
		var l landed
		var topic string
		var partition int32
		var offset int64
		waitfor.Condition(t, time.Minute, source+"/"+id+" in the sink", func() bool {
			err := w.sink.QueryRow(`SELECT event_type, partition_key, payload, topic, kafka_partition, kafka_offset FROM events WHERE source = ? AND event_id = ?`,
				source, id).Scan(&l.typ, &l.key, &l.payload, &topic, &partition, &offset)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				t.Fatalf("reading the sink: %v", err)
			}
			return err == nil
		})
		if l.typ != typ || topic != record.EventTopic(typ) {
			t.Errorf("%s/%s in the sink as %s from %s, want %s from %s", source, id, l.typ, topic, typ, record.EventTopic(typ))
		}
		if n := w.records(t, topic, source, id); n != 1 {
			t.Errorf("%s/%s: %d records in %s, want 1", source, id, n, topic)
		}
		l.rec = kafkatest.RecordAt(t, w.brokers, topic, partition, offset)
		if h, err := record.ParseEvent(l.rec); err != nil || h.ID != id || h.Source != source {
			t.Fatalf("the record the sink row names, %s[%d]@%d, is not %s/%s: %+v %v", topic, partition, offset, source, id, h, err)
		}
		w.wantTraced(t, source, id)
		out = append(out, l)
	}
	return out
}

// records counts the records of (source, id) in topic.
func (w *sendersWorld) records(t *testing.T, topic, source, id string) int {
	t.Helper()
	n := 0
	for _, r := range readTopic(t, w.brokers, topic) {
		if h, err := record.ParseEvent(r); err == nil && h.ID == id && h.Source == source {
			n++
		}
	}
	return n
}

// wantTraced runs sluice trace, as an operator would, until it finds
// (source, id) IN_SINK, and logs its text answer.
func (w *sendersWorld) wantTraced(t *testing.T, source, id string) {
	t.Helper()
	var last string
	waitfor.Condition(t, time.Minute, "sluice trace to find "+source+"/"+id+" IN_SINK", func() bool {
		code, out, errOut := runTrace("--config", w.consumerConfig, "--source", source, "--id", id, "--json")
		var a trace.Answer
		if err := json.Unmarshal([]byte(out), &a); err != nil || code > 1 {
			t.Fatalf("sluice trace %s/%s: exit %d, %v\n%s%s", source, id, code, err, out, errOut)
		}
		last = a.Summary
		return code == 0 && a.Status == trace.InSink
	})
	code, out, errOut := runTrace("--config", w.consumerConfig, "--source", source, "--id", id)
	if code != 0 || !strings.HasPrefix(out, "IN_SINK  "+source+"/"+id) {
		t.Errorf("sluice trace %s/%s: exit %d (last JSON summary %q)\n%s%s", source, id, code, last, out, errOut)
	}
	t.Logf("$ sluice trace --config consumer.yaml --source %s --id %s\n%s", source, id, out)
}

// sendersHeader is the value of a record's header key, and whether it has one.
func sendersHeader(r *kgo.Record, key string) (string, bool) {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

// signedAgain is what a consumer verifies a delivery from: the record's
// copy of the body as received, and of the signed headers, by their
// names as the provider sends them. It fails t unless the body is the
// one sent.
func signedAgain(t *testing.T, r *kgo.Record, sent []byte, names ...string) ([]byte, http.Header) {
	t.Helper()
	body, ok := sendersHeader(r, record.HeaderWebhookBody)
	if !ok || body != string(sent) {
		t.Fatalf("the record's %s is not the body sent (there: %v)", record.HeaderWebhookBody, ok)
	}
	h := http.Header{}
	for _, name := range names {
		v, ok := sendersHeader(r, record.WebhookHeaderPrefix+strings.ToLower(name))
		if !ok {
			t.Fatalf("the record has no %s%s", record.WebhookHeaderPrefix, strings.ToLower(name))
		}
		h.Set(name, v)
	}
	return []byte(body), h
}

// The deliveries the senders send.

// stripeEventBody is Stripe's example event with its id and creation
// time, as Stripe delivers it.
func stripeEventBody(t *testing.T, id string, created time.Time) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(examples.StripeEventJSON, &m); err != nil {
		t.Fatal(err)
	}
	m["id"], m["created"] = id, created.Unix()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// platformOrderBody is an order.placed delivery of the platform source in
// Standard Webhooks' recommended payload structure: the example
// OrderPlaced under data, with orderID.
func platformOrderBody(t *testing.T, at time.Time, orderID string) []byte {
	t.Helper()
	var order map[string]any
	if err := json.Unmarshal(examples.OrderPlacedJSON, &order); err != nil {
		t.Fatal(err)
	}
	order["order_id"] = orderID
	b, err := json.Marshal(map[string]any{"type": "order.placed", "timestamp": at.UTC().Format(time.RFC3339Nano), "data": order})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// githubPushBody is a push event in the shape of GitHub's documented push
// payload, with fewer fields, for the commit after.
func githubPushBody(after string) []byte {
	return []byte(`{"ref":"refs/heads/main","before":"9049f1265b7d61be4a8904a9a27120d2064dab3b","after":"` + after + `",` +
		`"repository":{"id":1296269,"node_id":"MDEwOlJlcG9zaXRvcnkxMjk2MjY5","name":"Hello-World","full_name":"octocat/Hello-World","private":false,` +
		`"owner":{"login":"octocat","id":1,"type":"User"},"html_url":"https://github.com/octocat/Hello-World","pushed_at":1764836102,"default_branch":"main"},` +
		`"pusher":{"name":"octocat","email":"octocat@github.com"},"sender":{"login":"octocat","id":1,"type":"User"},` +
		`"created":false,"deleted":false,"forced":false,"base_ref":null,"compare":"https://github.com/octocat/Hello-World/compare/9049f1265b7d...` + after[:12] + `",` +
		`"commits":[{"id":"` + after + `","message":"Update README.md","timestamp":"2026-11-29T08:15:02Z","author":{"name":"Mona Lisa Octocat","email":"mona@github.com"}}],` +
		`"head_commit":{"id":"` + after + `","message":"Update README.md"}}`)
}

// shopifyOrderBody is an orders/create payload in the shape of Shopify's
// documented example, with fewer fields, and the order id.
func shopifyOrderBody(id int64) []byte {
	return []byte(fmt.Sprintf(`{"id":%[1]d,"admin_graphql_api_id":"gid://shopify/Order/%[1]d","email":"jon@example.com","created_at":"2026-11-29T03:15:02-05:00",`+
		`"currency":"USD","total_price":"398.00","financial_status":"paid","test":false,`+
		`"line_items":[{"id":866550311766439020,"sku":"IPOD-342-N","quantity":2,"price":"199.00","title":"IPod Nano - 8GB","properties":[]}],`+
		`"customer":{"id":115310627314723954,"email":"john@example.com","first_name":"John","last_name":"Smith"},`+
		`"shipping_address":{"city":"Ottawa","country_code":"CA"}}`, id))
}

// signGitHub signs body as GitHub documents it ("Validating webhook
// deliveries", docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries):
// X-Hub-Signature-256 is "sha256=" and the hex HMAC-SHA256 of the body
// under the webhook's secret. GitHub publishes no Go signer;
// TestRealSenders checks this against GitHub's documented vector first,
// and its octokit subtest signs with GitHub's own JavaScript library.
func signGitHub(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// signShopify signs body as Shopify documents it ("Deliver webhooks
// through HTTPS", shopify.dev/docs/apps/build/webhooks/subscribe/https,
// the step that verifies a webhook): X-Shopify-Hmac-Sha256 is the base64
// HMAC-SHA256 of the raw body under the app's client secret. Shopify
// publishes no signer; TestRealSenders checks this first against the
// vector openssl computes for the body and secret of Shopify's own
// verification example.
func signShopify(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// githubHeaders are the headers of a GitHub push delivery.
func githubHeaders(delivery, signature string) http.Header {
	h := http.Header{}
	h.Set("X-GitHub-Event", "push")
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-GitHub-Hook-ID", "292430182")
	h.Set("User-Agent", "GitHub-Hookshot/044aadd")
	if signature != "" {
		h.Set("X-Hub-Signature-256", signature)
	}
	return h
}

// shopifyHeaders are the headers of a Shopify orders/create delivery.
func shopifyHeaders(webhookID, hmacB64 string, at time.Time) http.Header {
	h := http.Header{}
	h.Set("X-Shopify-Topic", "orders/create")
	h.Set("X-Shopify-Shop-Domain", "e2e-shop.myshopify.com")
	h.Set("X-Shopify-API-Version", "2025-10")
	h.Set("X-Shopify-Triggered-At", at.UTC().Format(time.RFC3339Nano))
	if webhookID != "" {
		h.Set("X-Shopify-Webhook-Id", webhookID)
	}
	if hmacB64 != "" {
		h.Set("X-Shopify-Hmac-Sha256", hmacB64)
	}
	return h
}

// signStandard signs a delivery with the Go Standard Webhooks library.
func signStandard(t *testing.T, secret, id string, at time.Time, body []byte) http.Header {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, at, body)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(at.Unix(), 10))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	return h
}

// signStripe signs a delivery with stripe-go.
func signStripe(secret string, at time.Time, body []byte) http.Header {
	p := stripewebhook.GenerateTestSignedPayload(&stripewebhook.UnsignedPayload{Payload: body, Secret: secret, Timestamp: at})
	h := http.Header{}
	h.Set("Stripe-Signature", p.Header)
	return h
}

// CloudEvents, sent by the CloudEvents Go SDK.

// lastAnswer is an http.RoundTripper that keeps the last answer it
// carried: the SDK's client returns a result, not the answer's body.
type lastAnswer struct {
	mu     sync.Mutex
	code   int
	header http.Header
	body   []byte
}

func (l *lastAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.code, l.header, l.body = resp.StatusCode, resp.Header.Clone(), body
	l.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// cloudEvent sends e with the SDK's client to POST /v1/cloudevents, with
// the telemetry source's key, in the mode that encoding sets
// (ce.WithEncodingStructured or ce.WithEncodingBinary).
func (w *sendersWorld) cloudEvent(t *testing.T, e event.Event, encoding func(context.Context) context.Context) func(t *testing.T) sendersAnswer {
	t.Helper()
	last := &lastAnswer{}
	p, err := cehttp.New(cehttp.WithTarget("http://"+w.httpAddr+"/v1/cloudevents"), cehttp.WithHeader("X-Api-Key", sendersCEKey),
		cehttp.WithRoundTripper(last))
	if err != nil {
		t.Fatal(err)
	}
	client, err := ce.NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T) sendersAnswer {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		last.code = 0
		res := client.Send(encoding(ctx), e)
		if last.code == 0 {
			t.Fatalf("the SDK sent nothing: %v", res)
		}
		if last.code == http.StatusOK && !ce.IsACK(res) {
			t.Errorf("the SDK takes the 200 for a NACK: %v", res)
		}
		return parseSendersAnswer(t, last.code, last.header, last.body)
	}
}

// cloudEventsBatch sends events as one batch-mode request, which the
// SDK's cehttp.NewHTTPRequestFromEvents builds.
func (w *sendersWorld) cloudEventsBatch(events []event.Event) func(t *testing.T) sendersAnswer {
	return func(t *testing.T) sendersAnswer {
		t.Helper()
		req, err := cehttp.NewHTTPRequestFromEvents(context.Background(), "http://"+w.httpAddr+"/v1/cloudevents", events)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Api-Key", sendersCEKey)
		return w.do(t, req)
	}
}

// logEvent is a CloudEvent of the example log line.
func logEvent(t *testing.T, id string, at time.Time) event.Event {
	t.Helper()
	e := ce.NewEvent()
	e.SetID(id)
	e.SetSource("//checkout.example/api")
	e.SetType("com.example.log")
	e.SetSubject("checkout-api")
	e.SetTime(at)
	e.SetExtension("region", "eu-west-1")
	if err := e.SetData(ce.ApplicationJSON, json.RawMessage(examples.LogLineJSON)); err != nil {
		t.Fatal(err)
	}
	return e
}

// profileEvent is a CloudEvent of the example profile update, with data.
func profileEvent(t *testing.T, id string, at time.Time, data []byte) event.Event {
	t.Helper()
	e := ce.NewEvent()
	e.SetID(id)
	e.SetSource("//identity.example/users")
	e.SetType("com.example.profile.updated")
	e.SetSubject("0b3f9c1e-5a8d-4e2b-9f61-2c7d8e4a1b90")
	e.SetTime(at)
	if err := e.SetData(ce.ApplicationJSON, json.RawMessage(data)); err != nil {
		t.Fatal(err)
	}
	return e
}

// wantCloudEventRecord checks what a CloudEvent's record carries beside
// the message: its subject as the key, its CloudEvents source beside the
// authenticated one, and the Kafka binding's ce_* headers.
func wantCloudEventRecord(t *testing.T, l landed, e event.Event) {
	t.Helper()
	if l.key != e.Subject() || string(l.rec.Key) != e.Subject() {
		t.Errorf("%s: key %q (row %q), want the subject %q", e.ID(), l.rec.Key, l.key, e.Subject())
	}
	for key, want := range map[string]string{
		record.HeaderCloudEventsSource: e.Source(),
		"ce_id":                        e.ID(),
		"ce_type":                      e.Type(),
		"ce_source":                    e.Source(),
		"ce_specversion":               "1.0",
	} {
		if got, _ := sendersHeader(l.rec, key); got != want {
			t.Errorf("%s: record header %s = %q, want %q", e.ID(), key, got, want)
		}
	}
}

// The opt-in senders: GitHub's JavaScript library, and the Python ones.

// octokit runs cmd/sluice/testdata/octokit_webhook.mjs with the package
// in SLUICE_OCTOKIT_NODE_MODULES; it skips t when that is unset.
func octokit(t *testing.T) func(t *testing.T, req, out any) {
	t.Helper()
	modules := os.Getenv("SLUICE_OCTOKIT_NODE_MODULES")
	if modules == "" {
		t.Skip("SLUICE_OCTOKIT_NODE_MODULES is not set: npm install --prefix DIR @octokit/webhooks-methods, then set it to DIR/node_modules")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("SLUICE_OCTOKIT_NODE_MODULES is set and node is not on the PATH")
	}
	// An ES module finds its packages in the node_modules beside it.
	dir := t.TempDir()
	script, err := os.ReadFile(filepath.Join("testdata", "octokit_webhook.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "octokit_webhook.mjs"), script, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mustAbs(t, modules), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	return func(t *testing.T, req, out any) {
		t.Helper()
		runJSON(t, exec.Command(node, filepath.Join(dir, "octokit_webhook.mjs")), req, out)
	}
}

// pythonWebhooks runs cmd/sluice/testdata/python_webhooks.py with the
// python in SLUICE_WEBHOOK_PYTHON; it skips t when that is unset.
func pythonWebhooks(t *testing.T) func(t *testing.T, req, out any) {
	t.Helper()
	python := os.Getenv("SLUICE_WEBHOOK_PYTHON")
	if python == "" {
		t.Skip("SLUICE_WEBHOOK_PYTHON is not set: a python with PyPI's standardwebhooks and stripe (a venv's bin/python)")
	}
	script := mustAbs(t, filepath.Join("testdata", "python_webhooks.py"))
	return func(t *testing.T, req, out any) {
		t.Helper()
		runJSON(t, exec.Command(python, script), req, out)
	}
}

// runJSON runs cmd with req as JSON on its stdin, within a minute, and
// decodes its stdout into out.
func runJSON(t *testing.T, cmd *exec.Cmd, req, out any) {
	t.Helper()
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	stdout, err := c.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(cmd.Args[len(cmd.Args)-1]), err, stderr.String())
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("%s printed %q: %v", filepath.Base(cmd.Args[len(cmd.Args)-1]), stdout, err)
	}
}

// flipped is b with its last byte changed, for a library to refuse.
func flipped(b []byte) []byte {
	c := slices.Clone(b)
	c[len(c)-1] ^= 1
	return c
}

// TestRealSenders: each sender's delivery through the gateway and the
// consumer tier is answered 200 ACCEPTED, sent again 200 DUPLICATE, lands
// in the sink once (one row, one Kafka record, which the row names), and
// sluice trace finds it IN_SINK; a webhook's record lets the sender's
// library verify the delivery again, from the record's copy of the body
// and the signed headers alone, and refuse it with a byte changed. The Go
// senders always run; octokit with SLUICE_OCTOKIT_NODE_MODULES, PyPI's
// standardwebhooks and stripe with SLUICE_WEBHOOK_PYTHON.
func TestRealSenders(t *testing.T) {
	// The documented recipes reproduce the providers' own vectors first:
	// GitHub's, and openssl's over the body and secret of Shopify's
	// verification example (printf '%s' BODY | openssl dgst -sha256
	// -hmac hush -binary | base64).
	if got := signGitHub("It's a Secret to Everybody", []byte("Hello, World!")); got != "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17" {
		t.Fatalf("the GitHub recipe signs GitHub's example as %s", got)
	}
	if got := signShopify("hush", []byte(`{"id":820982911946154508,"email":"jon@doe.ca","topic":"orders/create"}`)); got != "OfHPdyGVRpofzkzfvW7SxDxY5wwv73uWEW0Wt91citA=" {
		t.Fatalf("the Shopify recipe signs Shopify's example as %s", got)
	}
	w := startSenders(t, sendersLimits{})

	t.Run("stripe-go", func(t *testing.T) {
		now := time.Now()
		id := "evt_1QxE2eLkdIwHu7ixE2ESend1"
		body := stripeEventBody(t, id, now.Add(-2*time.Second))
		got := w.acceptOnce(t, "stripe", examples.StripeEventType, []string{id}, w.webhook("stripe", signStripe(sendersStripeSecret, now, body), body))
		if got[0].key != "cus_R8lUjMcPmRT6Ab" {
			t.Errorf("key %q, want the object's customer", got[0].key)
		}
		raw, h := signedAgain(t, got[0].rec, body, "Stripe-Signature")
		if err := stripewebhook.ValidatePayloadIgnoringTolerance(raw, h.Get("Stripe-Signature"), sendersStripeSecret); err != nil {
			t.Errorf("stripe-go does not verify the record: %v", err)
		}
		if err := stripewebhook.ValidatePayloadIgnoringTolerance(flipped(raw), h.Get("Stripe-Signature"), sendersStripeSecret); err == nil {
			t.Errorf("stripe-go verifies the record's body with a byte changed")
		}
	})

	t.Run("standard-webhooks-go", func(t *testing.T) {
		now := time.Now()
		id := "msg_2Lh9KRb0pCxWAvwLUbmwGoSend"
		body := platformOrderBody(t, now, "3b241101-e2bb-4255-8caf-4136c566a962")
		got := w.acceptOnce(t, "platform", sendersPlacedType, []string{id}, w.webhook("platform", signStandard(t, sendersStandardSecret, id, now, body), body))
		if got[0].key != "cust-1042" || !strings.Contains(got[0].payload, "3b241101-e2bb-4255-8caf-4136c566a962") {
			t.Errorf("key %q, payload %s: want the customer's key and the order under data", got[0].key, got[0].payload)
		}
		raw, h := signedAgain(t, got[0].rec, body, "webhook-id", "webhook-timestamp", "webhook-signature")
		wh, err := standardwebhooks.NewWebhook(sendersStandardSecret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(raw, h); err != nil {
			t.Errorf("the Standard Webhooks library does not verify the record: %v", err)
		}
		if err := wh.Verify(flipped(raw), h); err == nil {
			t.Errorf("the Standard Webhooks library verifies the record's body with a byte changed")
		}
	})

	t.Run("github-documented-recipe", func(t *testing.T) {
		delivery := "d2a3c5f0-cd88-11f0-8b1f-5d2c9c0e7a41"
		body := githubPushBody("0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c")
		got := w.acceptOnce(t, "github", sendersPushType, []string{delivery},
			w.webhook("github", githubHeaders(delivery, signGitHub(sendersGitHubSecret, body)), body))
		wantPush(t, got[0])
		raw, h := signedAgain(t, got[0].rec, body, "X-Hub-Signature-256")
		if sig := h.Get("X-Hub-Signature-256"); !hmac.Equal([]byte(sig), []byte(signGitHub(sendersGitHubSecret, raw))) ||
			hmac.Equal([]byte(sig), []byte(signGitHub(sendersGitHubSecret, flipped(raw)))) {
			t.Errorf("GitHub's recipe does not verify the record's body and signature")
		}
	})

	t.Run("shopify-documented-recipe", func(t *testing.T) {
		webhookID := "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"
		body := shopifyOrderBody(820982911946154508)
		got := w.acceptOnce(t, "shopify", sendersOrderType, []string{webhookID},
			w.webhook("shopify", shopifyHeaders(webhookID, signShopify(sendersShopifySecret, body), time.Now()), body))
		if got[0].key != "115310627314723954" || !strings.Contains(got[0].payload, "IPOD-342-N") || strings.Contains(got[0].payload, "financial") {
			t.Errorf("key %q, payload %s: want the customer's id as key, and the contract's fields only", got[0].key, got[0].payload)
		}
		raw, h := signedAgain(t, got[0].rec, body, "X-Shopify-Hmac-Sha256")
		if sig := h.Get("X-Shopify-Hmac-Sha256"); !hmac.Equal([]byte(sig), []byte(signShopify(sendersShopifySecret, raw))) ||
			hmac.Equal([]byte(sig), []byte(signShopify(sendersShopifySecret, flipped(raw)))) {
			t.Errorf("Shopify's recipe does not verify the record's body and signature")
		}
	})

	t.Run("cloudevents-sdk-structured", func(t *testing.T) {
		e := logEvent(t, "log-7f3a9c", time.Now())
		got := w.acceptOnce(t, "telemetry", sendersLogType, []string{e.ID()}, w.cloudEvent(t, e, ce.WithEncodingStructured))
		wantCloudEventRecord(t, got[0], e)
		if region, _ := sendersHeader(got[0].rec, record.AttributeHeaderPrefix+"region"); region != "eu-west-1" {
			t.Errorf("the region extension is attribute %q, want eu-west-1", region)
		}
	})

	t.Run("cloudevents-sdk-binary", func(t *testing.T) {
		e := profileEvent(t, "profile-2b81d4", time.Now(), examples.UserProfileUpdatedJSON)
		got := w.acceptOnce(t, "telemetry", sendersProfileType, []string{e.ID()}, w.cloudEvent(t, e, ce.WithEncodingBinary))
		wantCloudEventRecord(t, got[0], e)
	})

	t.Run("cloudevents-sdk-batch", func(t *testing.T) {
		now := time.Now()
		events := []event.Event{logEvent(t, "log-batch-1", now), logEvent(t, "log-batch-2", now)}
		got := w.acceptOnce(t, "telemetry", sendersLogType, []string{"log-batch-1", "log-batch-2"}, w.cloudEventsBatch(events))
		for i, l := range got {
			wantCloudEventRecord(t, l, events[i])
		}
	})

	t.Run("octokit", func(t *testing.T) {
		run := octokit(t)
		delivery := "6f0b2e4c-cd89-11f0-9a8e-1f2b3c4d5e6f"
		body := githubPushBody("7e2c4a1b9d8f6e5c3b2a1f0e9d8c7b6a5f4e3d2c")
		var signed struct{ Signature string }
		run(t, map[string]string{"op": "sign", "secret": sendersGitHubSecret, "payload": string(body)}, &signed)
		got := w.acceptOnce(t, "github", sendersPushType, []string{delivery}, w.webhook("github", githubHeaders(delivery, signed.Signature), body))
		wantPush(t, got[0])
		raw, h := signedAgain(t, got[0].rec, body, "X-Hub-Signature-256")
		for _, c := range []struct {
			body  []byte
			valid bool
		}{{raw, true}, {flipped(raw), false}} {
			var v struct{ Valid bool }
			run(t, map[string]string{"op": "verify", "secret": sendersGitHubSecret, "payload": string(c.body), "signature": h.Get("X-Hub-Signature-256")}, &v)
			if v.Valid != c.valid {
				t.Errorf("octokit's verify of the record's body (changed: %v): %v", !c.valid, v.Valid)
			}
		}
	})

	t.Run("python-standardwebhooks", func(t *testing.T) {
		run := pythonWebhooks(t)
		now := time.Now()
		id := "msg_2Lh9KRb0pCxWAvwLUbmwPySend"
		body := platformOrderBody(t, now, "9a1c3e5f-7b2d-4f60-8e1a-2c3d4e5f6a7b")
		var signed struct{ Headers map[string]string }
		run(t, map[string]any{"op": "sign", "scheme": "standard", "secret": sendersStandardSecret, "payload": string(body), "id": id, "timestamp": now.Unix()}, &signed)
		got := w.acceptOnce(t, "platform", sendersPlacedType, []string{id}, w.webhook("platform", headerOf(signed.Headers), body))
		raw, h := signedAgain(t, got[0].rec, body, "webhook-id", "webhook-timestamp", "webhook-signature")
		pythonVerifies(t, run, "standard", sendersStandardSecret, raw, h)
	})

	t.Run("python-stripe", func(t *testing.T) {
		run := pythonWebhooks(t)
		now := time.Now()
		id := "evt_1QxE2eLkdIwHu7ixPySend1"
		body := stripeEventBody(t, id, now.Add(-2*time.Second))
		var signed struct{ Headers map[string]string }
		run(t, map[string]any{"op": "sign", "scheme": "stripe", "secret": sendersStripeSecret, "payload": string(body), "timestamp": now.Unix()}, &signed)
		got := w.acceptOnce(t, "stripe", examples.StripeEventType, []string{id}, w.webhook("stripe", headerOf(signed.Headers), body))
		raw, h := signedAgain(t, got[0].rec, body, "Stripe-Signature")
		pythonVerifies(t, run, "stripe", sendersStripeSecret, raw, h)
	})
}

// wantPush checks a GitHub push's row: keyed by the repository, its
// message the contract's fields and none of the others GitHub sends.
func wantPush(t *testing.T, l landed) {
	t.Helper()
	if l.key != "octocat/Hello-World" || !strings.Contains(l.payload, "refs/heads/main") ||
		strings.Contains(l.payload, "head_commit") || strings.Contains(l.payload, "headCommit") {
		t.Errorf("key %q, payload %s: want the repository as key, and the contract's fields only", l.key, l.payload)
	}
}

// pythonVerifies checks that the Python library of scheme verifies body
// and h, and not with a byte of the body changed.
func pythonVerifies(t *testing.T, run func(t *testing.T, req, out any), scheme, secret string, body []byte, h http.Header) {
	t.Helper()
	headers := map[string]string{}
	for k := range h {
		headers[k] = h.Get(k)
	}
	for _, c := range []struct {
		body  []byte
		valid bool
	}{{body, true}, {flipped(body), false}} {
		var v struct {
			Valid bool
			Error string
		}
		run(t, map[string]any{"op": "verify", "scheme": scheme, "secret": secret, "payload": string(c.body), "headers": headers}, &v)
		if v.Valid != c.valid {
			t.Errorf("PyPI's %s verifies the record's body (changed: %v): %v %s", scheme, !c.valid, v.Valid, v.Error)
		}
	}
}

// headerOf is the http.Header of a signer's headers.
func headerOf(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// TestHostileDeliveries: deliveries that must not get in, through the
// running gateway, each answered with its typed refusal, with nothing
// published: at the end the event topics and the sink hold one event,
// the first of the replayed delivery id, and nothing of the others. What
// gateway/webhooks_test.go's TestWebhookRefusals covers for the stripe
// scheme alone (its signature failures, a Content-Length over the cap, an
// unmapped type) is covered here for the other schemes and end to end,
// and so is what it lacks: signed deliveries without the headers their
// mapping reads, a delivery id replayed with another body, a body over
// the cap without a Content-Length, a body that stops arriving, and the
// CloudEvents refusals. Memory stays bounded: a slow body holds its
// source's pre-authentication pool only until read_timeout cuts it off,
// after which a body of max_body_bytes is read again, and no request
// memory is left held.
func TestHostileDeliveries(t *testing.T) {
	const maxBody = 64 << 10
	w := startSenders(t, sendersLimits{maxBody: maxBody, preauth: maxBody + 4<<10, readTimeout: 2 * time.Second, maxEvents: 10})
	now := time.Now()

	// The first delivery of the id that is replayed below with another
	// body: accepted, and the one event the topics and the sink hold.
	const replayed = "msg_2Lh9KRb0pCxWAvwLUbmwReplay"
	first := platformOrderBody(t, now, "5d0a8c1e-3f2b-4a69-9e7d-1c2b3a4d5e6f")
	if a := w.webhook("platform", signStandard(t, sendersStandardSecret, replayed, now, first), first)(t); a.outcomes([]string{replayed}, ingestv1.Outcome_ACCEPTED) != nil {
		t.Fatalf("the first delivery of %s: %s", replayed, a.raw)
	}
	another := platformOrderBody(t, now, "e8f7d6c5-b4a3-4921-8f0e-d1c2b3a4f5e6")

	push := githubPushBody("3c9e8f7a6b5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b")
	order := shopifyOrderBody(450789469)
	stripeID := "evt_1QxE2eLkdIwHu7ixHostile"
	overCap := append(stripeEventBody(t, stripeID, now), bytes.Repeat([]byte(" "), maxBody)...)
	withoutHeader := func(h http.Header, name string) http.Header { h.Del(name); return h }
	log := string(examples.LogLineJSON)
	ceJSON := func(id, specversion string) []byte {
		m := map[string]any{"specversion": specversion, "type": "com.example.log", "source": "//checkout.example/api",
			"time": now.UTC().Format(time.RFC3339Nano), "datacontenttype": "application/json", "data": json.RawMessage(log)}
		if id != "" {
			m["id"] = id
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ceHeader := func(contentType string) http.Header {
		h := http.Header{}
		h.Set("X-Api-Key", sendersCEKey)
		h.Set("Content-Type", contentType)
		return h
	}
	binary := func(contentType, id string) http.Header {
		h := ceHeader(contentType)
		h.Set("ce-specversion", "1.0")
		h.Set("ce-id", id)
		h.Set("ce-type", "com.example.log")
		h.Set("ce-source", "//checkout.example/api")
		h.Set("ce-time", now.UTC().Format(time.RFC3339Nano))
		return h
	}
	var batch bytes.Buffer
	batch.WriteString("[")
	for i := range 11 {
		if i > 0 {
			batch.WriteString(",")
		}
		batch.Write(ceJSON(fmt.Sprintf("log-over-%d", i), "1.0"))
	}
	batch.WriteString("]")
	// sms_marketing without a phone breaks UserProfileUpdated's rule
	// user_profile_updated.sms_consent_needs_phone.
	noPhone := bytes.Replace(examples.UserProfileUpdatedJSON, []byte(`"phone": "+442071838750",`), nil, 1)
	if bytes.Equal(noPhone, examples.UserProfileUpdatedJSON) {
		t.Fatal("the example profile update has no phone to take out")
	}
	breaks, err := json.Marshal(map[string]any{"specversion": "1.0", "id": "profile-breaks-contract", "type": "com.example.profile.updated",
		"source": "//identity.example/users", "time": now.UTC().Format(time.RFC3339Nano), "datacontenttype": "application/json",
		"data": json.RawMessage(noPhone)})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name   string
		send   func(t *testing.T) sendersAnswer
		code   int
		reason ingestv1.Reason
		says   string    // in the answer
		counts [2]string // the sluice_webhook_refused_total {source, reason} it counts
	}{
		{"github: a signature over another body",
			w.webhook("github", githubHeaders("a0b1c2d3-0001-4000-8000-000000000001", signGitHub(sendersGitHubSecret, githubPushBody("0000000000000000000000000000000000000001"))), push),
			401, ingestv1.Reason_UNAUTHENTICATED, "", [2]string{"github", "bad_signature"}},
		{"github: no X-Hub-Signature-256",
			w.webhook("github", githubHeaders("a0b1c2d3-0001-4000-8000-000000000002", ""), push),
			401, ingestv1.Reason_UNAUTHENTICATED, "", [2]string{"github", "missing_header"}},
		{"github: signed, no X-GitHub-Event to map",
			w.webhook("github", withoutHeader(githubHeaders("a0b1c2d3-0001-4000-8000-000000000003", signGitHub(sendersGitHubSecret, push)), "X-GitHub-Event"), push),
			400, ingestv1.Reason_MALFORMED, "mapping.type", [2]string{}},
		{"shopify: signed with another secret",
			w.webhook("shopify", shopifyHeaders("c1d2e3f4-0001-4000-8000-000000000001", signShopify("another app's secret", order), now), order),
			401, ingestv1.Reason_UNAUTHENTICATED, "", [2]string{"shopify", "bad_signature"}},
		{"shopify: signed, no X-Shopify-Webhook-Id to map",
			w.webhook("shopify", shopifyHeaders("", signShopify(sendersShopifySecret, order), now), order),
			400, ingestv1.Reason_MALFORMED, "mapping.id", [2]string{}},
		{"standard: a stale timestamp",
			w.webhook("platform", signStandard(t, sendersStandardSecret, "msg_hostile_stale", now.Add(-6*time.Minute), first), first),
			401, ingestv1.Reason_UNAUTHENTICATED, "", [2]string{"platform", "stale_timestamp"}},
		{"standard: a future timestamp",
			w.webhook("platform", signStandard(t, sendersStandardSecret, "msg_hostile_future", now.Add(6*time.Minute), first), first),
			401, ingestv1.Reason_UNAUTHENTICATED, "", [2]string{"platform", "future_timestamp"}},
		{"standard: no webhook-timestamp",
			w.webhook("platform", withoutHeader(signStandard(t, sendersStandardSecret, "msg_hostile_no_ts", now, first), "webhook-timestamp"), first),
			401, ingestv1.Reason_UNAUTHENTICATED, "", [2]string{"platform", "missing_header"}},
		{"standard: a delivery id replayed with another body",
			w.webhook("platform", signStandard(t, sendersStandardSecret, replayed, now, another), another),
			409, ingestv1.Reason_IDEMPOTENCY_CONFLICT, "", [2]string{}},
		{"stripe: a signed body over max_body_bytes, without a Content-Length", func(t *testing.T) sendersAnswer {
			req, err := http.NewRequest(http.MethodPost, "http://"+w.httpAddr+"/v1/webhooks/stripe", io.MultiReader(bytes.NewReader(overCap)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = signStripe(sendersStripeSecret, now, overCap)
			req.Header.Set("Content-Type", "application/json")
			return w.do(t, req)
		}, 413, ingestv1.Reason_BATCH_TOO_LARGE, "max_body_bytes", [2]string{}},
		{"cloudevents: structured, no id",
			func(t *testing.T) sendersAnswer {
				return w.post(t, "/v1/cloudevents", ceHeader("application/cloudevents+json"), ceJSON("", "1.0"))
			}, 400, ingestv1.Reason_MALFORMED, "id", [2]string{}},
		{"cloudevents: structured, specversion 0.3",
			func(t *testing.T) sendersAnswer {
				return w.post(t, "/v1/cloudevents", ceHeader("application/cloudevents+json"), ceJSON("log-spec-03", "0.3"))
			}, 400, ingestv1.Reason_MALFORMED, "specversion", [2]string{}},
		{"cloudevents: a batch over max_events_per_request",
			func(t *testing.T) sendersAnswer {
				return w.post(t, "/v1/cloudevents", ceHeader("application/cloudevents-batch+json"), batch.Bytes())
			}, 413, ingestv1.Reason_BATCH_TOO_LARGE, "", [2]string{}},
		{"cloudevents: data that breaks the contract",
			func(t *testing.T) sendersAnswer {
				return w.post(t, "/v1/cloudevents", ceHeader("application/cloudevents+json"), breaks)
			}, 422, ingestv1.Reason_SCHEMA_VIOLATION, "sms_consent_needs_phone", [2]string{}},
		{"cloudevents: binary, a JSON body sent as application/protobuf",
			func(t *testing.T) sendersAnswer {
				return w.post(t, "/v1/cloudevents", binary("application/protobuf", "log-binary-protobuf"), examples.LogLineJSON)
			}, 400, ingestv1.Reason_MALFORMED, "sluice.decode", [2]string{}},
		{"cloudevents: binary, a content type no contract reads",
			func(t *testing.T) sendersAnswer {
				return w.post(t, "/v1/cloudevents", binary("application/xml", "log-binary-xml"), []byte("<log>checkout-api</log>"))
			}, 400, ingestv1.Reason_MALFORMED, "datacontenttype", [2]string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := c.send(t)
			t.Logf("%d %s", a.code, a.raw)
			if a.code != c.code || a.reason() != c.reason || !strings.Contains(a.raw, c.says) {
				t.Fatalf("%d %s, want %d %s saying %q", a.code, a.raw, c.code, c.reason, c.says)
			}
			if a.failure != nil && a.failure.GetRetryable() || slices.ContainsFunc(a.results, func(r *ingestv1.EventResult) bool {
				return r.GetOutcome() != ingestv1.Outcome_REJECTED || r.GetRejection().GetRetryable()
			}) {
				t.Errorf("answered retryable, or not refused: %s", a.raw)
			}
			if c.counts != [2]string{} {
				_, metrics := adminGet(t, w.gatewayAdmin, "/metrics")
				if n, _ := metricValue(metrics, "sluice_webhook_refused_total", `source="`+c.counts[0]+`"`, `reason="`+c.counts[1]+`"`); n != 1 {
					t.Errorf("sluice_webhook_refused_total{source=%q,reason=%q} = %v, want 1", c.counts[0], c.counts[1], n)
				}
			}
		})
	}

	t.Run("a body that stops arriving", func(t *testing.T) {
		conn := w.slowBody(t, maxBody)
		defer conn.Close()
		// read_timeout cuts it off with a typed answer, not a hang or a
		// closed connection.
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to the slow body: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if a := parseSendersAnswer(t, resp.StatusCode, resp.Header, body); a.code != http.StatusBadRequest || a.reason() != ingestv1.Reason_MALFORMED ||
			!strings.Contains(a.raw, "read_timeout") {
			t.Fatalf("the slow body: %d %s, want 400 MALFORMED naming read_timeout", a.code, a.raw)
		}
		// Its share is free again: a body of max_body_bytes is read (and
		// refused for its missing signature), not refused unread. (The
		// probes' own shares are freed just after their answers: the
		// condition waits for those, and fails only if a share is never
		// freed.)
		full := bytes.Repeat([]byte(" "), maxBody)
		waitfor.Condition(t, 30*time.Second, "a body of max_body_bytes to be read after the slow one", func() bool {
			a := w.post(t, "/v1/webhooks/stripe", http.Header{"Content-Type": {"application/json"}}, full)
			if a.code != http.StatusUnauthorized && a.code != http.StatusServiceUnavailable {
				t.Fatalf("a body of max_body_bytes: %d %s, want 401 (or 503 while the pool is held)", a.code, a.raw)
			}
			return a.code == http.StatusUnauthorized
		})
	})

	// Nothing refused was published. The replayed id's first delivery
	// lands in the sink, and then the topics and the sink hold it alone,
	// with its first body.
	waitfor.Condition(t, time.Minute, "the replayed id's first delivery in the sink", func() bool {
		var n int
		return w.sink.QueryRow(`SELECT count(*) FROM events WHERE source = 'platform' AND event_id = ?`, replayed).Scan(&n) == nil && n == 1
	})
	var published []string
	for _, topic := range w.topics {
		for _, r := range readTopic(t, w.brokers, topic) {
			h, err := record.ParseEvent(r)
			if err != nil {
				t.Fatalf("%s[%d]@%d: %v", r.Topic, r.Partition, r.Offset, err)
			}
			published = append(published, h.Source+"/"+h.ID)
		}
	}
	if !slices.Equal(published, []string{"platform/" + replayed}) {
		t.Errorf("published %q, want only platform/%s", published, replayed)
	}
	rows, err := w.sink.Query(`SELECT source, event_id, payload FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sunk []string
	for rows.Next() {
		var source, id, payload string
		if err := rows.Scan(&source, &id, &payload); err != nil {
			t.Fatal(err)
		}
		sunk = append(sunk, source+"/"+id)
		if id == replayed && !strings.Contains(payload, "5d0a8c1e-3f2b-4a69-9e7d-1c2b3a4d5e6f") {
			t.Errorf("the sink holds %s with %s, want the first body's order", replayed, payload)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sunk, []string{"platform/" + replayed}) {
		t.Errorf("the sink holds %q, want only platform/%s", sunk, replayed)
	}
	// No request memory is left held once every request is answered.
	_, metrics := adminGet(t, w.gatewayAdmin, "/metrics")
	if n, ok := metricValue(metrics, "sluice_request_memory_bytes", `pool="requests"`); !ok || n != 0 {
		t.Errorf(`sluice_request_memory_bytes{pool="requests"} = %v (there: %v), want 0`, n, ok)
	}
}

// metricValue is the value of the series of name whose labels include
// labels (each `key="value"`) in the Prometheus text exposition, and
// whether there is one.
func metricValue(text, name string, labels ...string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		series, value, ok := strings.Cut(rest, " ")
		if rest[0] == '{' {
			end := strings.LastIndex(rest, "} ")
			if end < 0 {
				continue
			}
			series, value, ok = rest[:end+1], rest[end+2:], true
		}
		if !ok || slices.ContainsFunc(labels, func(l string) bool { return !strings.Contains(series, l) }) {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		return v, err == nil
	}
	return 0, false
}

// slowBody opens a delivery to the stripe source that announces a body of
// size bytes (the source's max_body_bytes) and sends a part of it, and
// returns its connection once the body holds the source's whole
// pre-authentication pool: while it does, a delivery to the source is
// refused 503 unread. A probe sent before the slow body's headers are
// read is answered 401 for its missing signature; one whose share of the
// pool the slow body found taken makes the gateway refuse the slow body
// instead (sluice_webhook_preauth_refused_total counts it), and then a
// new slow body is opened.
func (w *sendersWorld) slowBody(t *testing.T, size int) net.Conn {
	t.Helper()
	refused := func() float64 {
		_, metrics := adminGet(t, w.gatewayAdmin, "/metrics")
		n, _ := metricValue(metrics, "sluice_webhook_preauth_refused_total", `source="stripe"`)
		return n
	}
	part := stripeEventBody(t, "evt_1QxE2eLkdIwHu7ixSlowBody", time.Now())
	head := fmt.Sprintf("POST /v1/webhooks/stripe HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\nStripe-Signature: %s\r\nContent-Length: %d\r\n\r\n",
		signStripe(sendersStripeSecret, time.Now(), part).Get("Stripe-Signature"), size)
	probe := http.Header{"Content-Type": {"application/json"}}
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		before := refused()
		conn, err := net.Dial("tcp", w.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.SetDeadline(deadline); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(conn, head+string(part)); err != nil {
			t.Fatal(err)
		}
		for time.Now().Before(deadline) {
			a := w.post(t, "/v1/webhooks/stripe", probe, []byte("{}"))
			if a.code == http.StatusServiceUnavailable {
				if a.reason() != ingestv1.Reason_UNAVAILABLE || a.header.Get("Retry-After") == "" || !strings.Contains(a.raw, "preauth_memory_bytes") {
					t.Fatalf("a delivery beside the slow body: %s, want 503 UNAVAILABLE with Retry-After naming preauth_memory_bytes", a.raw)
				}
				return conn
			}
			if a.code != http.StatusUnauthorized {
				t.Fatalf("a probe: %d %s, want 401 or 503", a.code, a.raw)
			}
			if refused() > before { // the slow body was refused: open another
				break
			}
		}
		conn.Close()
	}
	t.Fatalf("no slow body held the stripe source's pool within a minute")
	return nil
}
