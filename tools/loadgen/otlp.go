package loadgen

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP sink: an OTLP/HTTP (protobuf) trace receiver that counts the
// spans it is sent and throws them away, for the benchmark's tracing rows.
// It runs beside the load generator, so that what a gateway pays to trace
// is its own CPU and not a collector's.

// maxOTLPBody bounds one export's body (the SDK's batches are far smaller).
const maxOTLPBody = 64 << 20

// OTLPStats is what the sink has counted since it started.
type OTLPStats struct {
	Requests int64 `json:"requests"`
	Spans    int64 `json:"spans"`
	Bytes    int64 `json:"bytes"`
	Refused  int64 `json:"refused"`
}

// OTLPSink is the handler: POST /v1/traces counts and answers 200 with an
// empty ExportTraceServiceResponse; GET /stats answers OTLPStats as JSON.
type OTLPSink struct {
	requests, spans, bytes, refused atomic.Int64
}

// Stats is what the sink has counted.
func (s *OTLPSink) Stats() OTLPStats {
	return OTLPStats{Requests: s.requests.Load(), Spans: s.spans.Load(), Bytes: s.bytes.Load(), Refused: s.refused.Load()}
}

func (s *OTLPSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/stats":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
	case r.Method == http.MethodPost && r.URL.Path == "/v1/traces":
		n, size, err := s.read(r)
		if err != nil {
			s.refused.Add(1)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.requests.Add(1)
		s.spans.Add(int64(n))
		s.bytes.Add(size)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	default:
		http.NotFound(w, r)
	}
}

func (s *OTLPSink) read(r *http.Request) (spans int, size int64, err error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return 0, 0, fmt.Errorf("content type %q: only application/x-protobuf is counted", ct)
	}
	var body io.Reader = r.Body
	switch r.Header.Get("Content-Encoding") {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return 0, 0, err
		}
		defer zr.Close()
		body = zr
	default:
		return 0, 0, fmt.Errorf("content encoding %q", r.Header.Get("Content-Encoding"))
	}
	b, err := io.ReadAll(io.LimitReader(body, maxOTLPBody+1))
	if err != nil {
		return 0, 0, err
	}
	if len(b) > maxOTLPBody {
		return 0, 0, errors.New("body over 64 MiB")
	}
	n, err := CountSpans(b)
	return n, int64(len(b)), err
}

// CountSpans counts the spans of an OTLP ExportTraceServiceRequest in its
// protobuf encoding: resource_spans (1) → scope_spans (2) → spans (2),
// without decoding the spans themselves.
func CountSpans(b []byte) (int, error) {
	n := 0
	err := eachField(b, 1, func(rs []byte) error {
		return eachField(rs, 2, func(ss []byte) error {
			return eachField(ss, 2, func([]byte) error { n++; return nil })
		})
	})
	return n, err
}

// eachField calls fn with the bytes of every length-delimited field num of
// the message b, skipping its other fields; malformed input is an error.
func eachField(b []byte, num protowire.Number, fn func([]byte) error) error {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
		if n == num && typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(b)
			if l < 0 {
				return protowire.ParseError(l)
			}
			if err := fn(v); err != nil {
				return err
			}
			b = b[l:]
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, b)
		if l < 0 {
			return protowire.ParseError(l)
		}
		b = b[l:]
	}
	return nil
}

// ServeOTLP serves an OTLPSink on addr until ctx ends, then stops it and
// returns what it counted. listening, when set, gets the bound address.
func ServeOTLP(ctx context.Context, addr string, listening func(net.Addr)) (OTLPStats, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return OTLPStats{}, fmt.Errorf("loadgen: serve-otlp: %w", err)
	}
	if listening != nil {
		listening(lis.Addr())
	}
	sink := &OTLPSink{}
	srv := &http.Server{Handler: sink, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(lis) }()
	select {
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
		<-errc
		return sink.Stats(), nil
	case err := <-errc:
		return sink.Stats(), fmt.Errorf("loadgen: serve-otlp: %w", err)
	}
}
