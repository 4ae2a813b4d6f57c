package loadgen

import (
	"bytes"
	"math"
	"unicode/utf8"

	ingestv1 "github.com/sluicehq/sluice/gen/sluice/ingest/v1"
)

// answerParser reads the answers the gateway gives to the requests a run
// sends, one pass over the body and no reflection: {"results":[...]} whose
// results carry index, id, outcome, durability, a Kafka position and a
// rejection's reason, retryable, message and an empty violations list,
// with strings that need no unescaping. That is every answer of a run
// against a healthy gateway. For any other body (a spool position, a
// wait, a conflict, an escape, a number protojson would read but this
// does not, a whole-request refusal) parse reports false and the caller
// reads it with restAnswerReflect, which this matches on the bodies it
// reads (FuzzRESTAnswerParser).
type answerParser struct {
	b       []byte
	i       int
	results []parsedResult
	seen    []bool
	topic   string // the last topic read: a run's answers repeat it
}

type parsedResult struct {
	index            uint32
	id               []byte
	outcome          ingestv1.Outcome
	durability       ingestv1.Durability
	kafka            bool
	topic            []byte
	partition        int32
	offset           int64
	reason           ingestv1.Reason
	retryable        bool
	message          []byte
	hasMsg, hasRetry bool
}

// parse reads body as the answer to a request of n events; events, when
// given, are the request's, whose ids the results reuse. ok is false when
// body is not in the form it reads; ans and err are then to be ignored.
func (p *answerParser) parse(body []byte, events []*ingestv1.Event, n int) (ans Answer, err error, ok bool) {
	p.b, p.i, p.results = bytes.TrimSpace(body), 0, p.results[:0]
	defer func() { p.b = nil }()
	if !p.lit('{') || !p.key("results") || !p.lit('[') {
		return Answer{}, nil, false
	}
	if !p.lit(']') {
		for {
			var r parsedResult
			if !p.result(&r) {
				return Answer{}, nil, false
			}
			p.results = append(p.results, r)
			if p.lit(',') {
				continue
			}
			if !p.lit(']') {
				return Answer{}, nil, false
			}
			break
		}
	}
	if !p.lit('}') {
		return Answer{}, nil, false
	}
	if p.ws(); p.i != len(p.b) {
		return Answer{}, nil, false
	}
	rs, err := p.assemble(events, n)
	return Answer{Results: rs}, err, true
}

// assemble is resultsOf over the parsed results.
func (p *answerParser) assemble(events []*ingestv1.Event, n int) ([]EventResult, error) {
	if len(p.results) != n {
		return nil, errAnswerLength(len(p.results), n)
	}
	out := make([]EventResult, n)
	p.seen = append(p.seen[:0], make([]bool, n)...)
	for k := range p.results {
		r := &p.results[k]
		i := int(r.index)
		if i >= n || p.seen[i] {
			return nil, errAnswerIndex(i, n)
		}
		p.seen[i] = true
		o := &out[i]
		if i < len(events) && string(r.id) == events[i].GetId() {
			o.ID = events[i].GetId()
		} else {
			o.ID = string(r.id)
		}
		o.Outcome, o.Durability = r.outcome, r.durability
		if r.kafka {
			if string(r.topic) != p.topic {
				p.topic = string(r.topic)
			}
			o.Kafka = &ingestv1.KafkaPosition{Topic: p.topic, Partition: r.partition, Offset: r.offset}
		}
		if r.outcome == ingestv1.Outcome_REJECTED {
			o.Reason = r.reason.String()
			o.Retryable = r.retryable
			o.Message = string(r.message)
		}
	}
	return out, nil
}

// members reads a JSON object whose members member reads: member gets a
// member's name, reads its value and returns the member's bit, distinct
// per name, or false for a value or a member it does not read. A member
// twice is false.
func (p *answerParser) members(member func(name []byte) (uint8, bool)) bool {
	if !p.lit('{') {
		return false
	}
	if p.lit('}') {
		return true
	}
	var have uint8
	for {
		name, ok := p.str()
		if !ok || !p.lit(':') {
			return false
		}
		bit, ok := member(name)
		if !ok || have&bit != 0 {
			return false
		}
		have |= bit
		if p.lit(',') {
			continue
		}
		return p.lit('}')
	}
}

// result reads one result object; a member twice, or one it does not
// read, is false.
func (p *answerParser) result(r *parsedResult) bool {
	return p.members(func(name []byte) (uint8, bool) {
		var ok bool
		switch string(name) {
		case "index":
			var v uint64
			v, ok = p.uint(math.MaxUint32)
			r.index = uint32(v)
			return 1, ok
		case "id":
			r.id, ok = p.str()
			return 2, ok
		case "outcome":
			var v int32
			v, ok = p.enum(ingestv1.Outcome_value)
			r.outcome = ingestv1.Outcome(v)
			return 4, ok
		case "durability":
			var v int32
			v, ok = p.enum(ingestv1.Durability_value)
			r.durability = ingestv1.Durability(v)
			return 8, ok
		case "kafka":
			r.kafka = true
			return 16, p.kafka(r)
		case "rejection":
			return 32, p.rejection(r)
		}
		return 0, false
	})
}

func (p *answerParser) kafka(r *parsedResult) bool {
	return p.members(func(name []byte) (uint8, bool) {
		var ok bool
		switch string(name) {
		case "topic":
			r.topic, ok = p.str()
			return 1, ok
		case "partition":
			var v int64
			v, ok = p.int(math.MaxInt32, false)
			r.partition = int32(v)
			return 2, ok
		case "offset":
			// protojson writes an int64 as a string, and reads either.
			r.offset, ok = p.int(math.MaxInt64, true)
			return 4, ok
		}
		return 0, false
	})
}

func (p *answerParser) rejection(r *parsedResult) bool {
	return p.members(func(name []byte) (uint8, bool) {
		var ok bool
		switch string(name) {
		case "reason":
			var v int32
			v, ok = p.enum(ingestv1.Reason_value)
			r.reason = ingestv1.Reason(v)
			return 1, ok
		case "retryable":
			switch {
			case p.word("true"):
				r.retryable = true
			case p.word("false"):
				r.retryable = false
			default:
				return 2, false
			}
			return 2, true
		case "message":
			r.message, ok = p.str()
			return 4, ok
		case "violations":
			// Only the empty list the gateway writes for a rejection
			// without violations.
			return 8, p.lit('[') && p.lit(']')
		}
		return 0, false
	})
}

// ws skips JSON white space.
func (p *answerParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// lit reads c after white space.
func (p *answerParser) lit(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// key reads "name": after white space.
func (p *answerParser) key(name string) bool {
	s, ok := p.str()
	return ok && string(s) == name && p.lit(':')
}

// word reads a literal (true, false) that a delimiter ends.
func (p *answerParser) word(w string) bool {
	p.ws()
	if !bytes.HasPrefix(p.b[p.i:], []byte(w)) {
		return false
	}
	if j := p.i + len(w); j < len(p.b) && !delimiter(p.b[j]) {
		return false
	}
	p.i += len(w)
	return true
}

func delimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', '}', ']':
		return true
	}
	return false
}

// str reads a string without escapes or control characters, valid UTF-8;
// the result aliases the body.
func (p *answerParser) str() ([]byte, bool) {
	if !p.lit('"') {
		return nil, false
	}
	start := p.i
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			s := p.b[start:j]
			p.i = j + 1
			return s, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// enum reads an enum's name among names.
func (p *answerParser) enum(names map[string]int32) (int32, bool) {
	s, ok := p.str()
	if !ok {
		return 0, false
	}
	v, ok := names[string(s)]
	return v, ok
}

// uint reads a non-negative integer in JSON's form, at most max: digits
// without a leading zero, that a delimiter ends (no fraction or exponent).
func (p *answerParser) uint(max uint64) (uint64, bool) {
	p.ws()
	j := p.i
	if j >= len(p.b) || p.b[j] < '0' || p.b[j] > '9' || (p.b[j] == '0' && j+1 < len(p.b) && p.b[j+1] >= '0' && p.b[j+1] <= '9') {
		return 0, false
	}
	var v uint64
	for ; j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9'; j++ {
		d := uint64(p.b[j] - '0')
		if v > (max-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if j < len(p.b) && !delimiter(p.b[j]) && p.b[j] != '"' {
		return 0, false
	}
	p.i = j
	return v, true
}

// int reads an integer from -max-1 to max as a JSON number or, when
// quoted is true, as a string holding one.
func (p *answerParser) int(max uint64, quoted bool) (int64, bool) {
	p.ws()
	q := quoted && p.i < len(p.b) && p.b[p.i] == '"'
	if q {
		p.i++
	}
	neg := p.i < len(p.b) && p.b[p.i] == '-'
	if neg {
		p.i++
	}
	if p.i >= len(p.b) || p.b[p.i] < '0' || p.b[p.i] > '9' {
		return 0, false
	}
	limit := max
	if neg {
		limit++
	}
	v, ok := p.uint(limit)
	if !ok {
		return 0, false
	}
	if q {
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return 0, false
		}
		p.i++
		if p.i < len(p.b) && !delimiter(p.b[p.i]) {
			return 0, false
		}
	} else if p.i < len(p.b) && p.b[p.i] == '"' {
		return 0, false
	}
	if neg {
		return int64(-v), true
	}
	return int64(v), true
}
