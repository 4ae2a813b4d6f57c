package trace

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/admin"
)

// Reasons of a refused request (ErrorDetail.Reason).
const (
	// ReasonInvalidArgument: the path or a query parameter is wrong (400).
	ReasonInvalidArgument = "INVALID_ARGUMENT"
	// ReasonBusy: WithMaxConcurrent lookups run already (503, Retry-After).
	ReasonBusy = "BUSY"
	// ReasonUnavailable: the audit table or Kafka did not answer (503).
	ReasonUnavailable = "UNAVAILABLE"
)

// ErrorBody is the JSON of a refused request.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says why a request was refused.
type ErrorDetail struct {
	Reason string `json:"reason"`
	// Field names the path value or parameter that is wrong.
	Field     string `json:"field,omitempty"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// Query parameters of the endpoint.
const (
	ParamTopic      = "topic"
	ParamPartition  = "partition"
	ParamOffset     = "offset"
	ParamMaxRecords = "max_records"
	ParamTimeout    = "timeout"
)

// Routes adds the trace endpoint to mux:
//
//	GET /v1/trace/{source}/{id}[?topic=T&partition=P&offset=O][&max_records=N][&timeout=D]
//
// It answers the Answer as JSON: 200 when the event was found, 404 for
// UNKNOWN. topic, partition and offset, given together, are the Hint;
// max_records and timeout may lower the Tracer's limits, never raise them.
// A bad path or parameter is 400 with an ErrorBody (INVALID_ARGUMENT and
// the field); a lookup past WithMaxConcurrent is 503 BUSY with
// Retry-After; an audit table or Kafka that does not answer is 503
// UNAVAILABLE. A source or id holding "/" is sent escaped (%2F).
func (t *Tracer) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/trace/{source}/{id}", t.serveTrace)
	mux.HandleFunc("GET /v1/trace/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusBadRequest, ErrorDetail{Reason: ReasonInvalidArgument, Field: "path",
			Message: "give /v1/trace/{source}/{id}, each escaped as one path segment"})
	})
}

func (t *Tracer) serveTrace(w http.ResponseWriter, r *http.Request) {
	q, err := ParseRequest(r.PathValue("source"), r.PathValue("id"), r.URL.RawQuery, t.o.limits, t.sources)
	if err != nil {
		writeQueryError(w, err)
		return
	}
	select {
	case t.busy <- struct{}{}:
		defer func() { <-t.busy }()
	default:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, ErrorDetail{Reason: ReasonBusy, Retryable: true,
			Message: fmt.Sprintf("%d lookups run already", cap(t.busy))})
		return
	}
	a, err := t.Trace(r.Context(), q)
	if err != nil {
		var qe *QueryError
		if errors.As(err, &qe) {
			writeQueryError(w, err)
			return
		}
		t.o.log.Warn("trace", "source", q.Source, "id", q.ID, "err", err)
		writeError(w, http.StatusServiceUnavailable, ErrorDetail{Reason: ReasonUnavailable, Retryable: true, Message: err.Error()})
		return
	}
	code := http.StatusOK
	if a.Status == Unknown {
		code = http.StatusNotFound
	}
	admin.WriteJSON(w, code, a)
}

// ParseRequest reads a request of the endpoint: the path's source and id
// (unescaped) and its raw query, within the ceiling limits, its hint's
// topic one of sources. Its error is a *QueryError naming the field.
func ParseRequest(source, id, rawQuery string, ceiling Limits, sources []string) (Query, error) {
	q := Query{Source: source, ID: id}
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return Query{}, &QueryError{Field: "query", Err: err}
	}
	for _, k := range slices.Sorted(maps.Keys(values)) {
		switch k {
		case ParamTopic, ParamPartition, ParamOffset, ParamMaxRecords, ParamTimeout:
		case "":
			return Query{}, &QueryError{Field: "query", Err: errors.New("holds a parameter without a name")}
		default:
			return Query{}, &QueryError{Field: k, Err: errors.New("is not a parameter of this endpoint")}
		}
		if len(values[k]) > 1 {
			return Query{}, &QueryError{Field: k, Err: errors.New("is given more than once")}
		}
	}
	_, hasTopic := values[ParamTopic]
	_, hasPartition := values[ParamPartition]
	_, hasOffset := values[ParamOffset]
	if hasTopic || hasPartition || hasOffset {
		for _, p := range []struct {
			name string
			has  bool
		}{{ParamTopic, hasTopic}, {ParamPartition, hasPartition}, {ParamOffset, hasOffset}} {
			if !p.has {
				return Query{}, &QueryError{Field: p.name, Err: errors.New("is missing: topic, partition and offset come together")}
			}
		}
		h := &Position{Topic: values.Get(ParamTopic)}
		p, err := strconv.ParseInt(values.Get(ParamPartition), 10, 32)
		if err != nil {
			return Query{}, &QueryError{Field: ParamPartition, Err: errors.New("is not a partition number")}
		}
		h.Partition = int32(p)
		if h.Offset, err = strconv.ParseInt(values.Get(ParamOffset), 10, 64); err != nil {
			return Query{}, &QueryError{Field: ParamOffset, Err: errors.New("is not an offset")}
		}
		q.Hint = h
	}
	if v, ok := values[ParamMaxRecords]; ok {
		n, err := strconv.ParseInt(v[0], 10, 64)
		if err != nil || n < 1 || n > ceiling.MaxRecords {
			return Query{}, &QueryError{Field: ParamMaxRecords, Err: fmt.Errorf("must be a number in [1, %d]", ceiling.MaxRecords)}
		}
		q.Limits.MaxRecords = n
	}
	if v, ok := values[ParamTimeout]; ok {
		d, err := time.ParseDuration(v[0])
		if err != nil || d <= 0 || d > ceiling.Timeout {
			return Query{}, &QueryError{Field: ParamTimeout, Err: fmt.Errorf("must be a duration in (0, %s]", ceiling.Timeout)}
		}
		q.Limits.Timeout = d
	}
	if err := q.Validate(sources); err != nil {
		return Query{}, err
	}
	return q, nil
}

func writeQueryError(w http.ResponseWriter, err error) {
	d := ErrorDetail{Reason: ReasonInvalidArgument, Message: err.Error()}
	var qe *QueryError
	if errors.As(err, &qe) {
		d.Field = qe.Field
	}
	writeError(w, http.StatusBadRequest, d)
}

func writeError(w http.ResponseWriter, code int, d ErrorDetail) {
	admin.WriteJSON(w, code, ErrorBody{Error: d})
}
