package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A spooled record is a Kafka record as the disk spool keeps it: what is
// needed to produce it again, and nothing of the client's (no partition,
// offset or timestamp: the client assigns them when the record is
// produced from the spool).
//
//	version   byte (1)
//	topic     uvarint length, bytes
//	key       uvarint length, bytes
//	value     uvarint length, bytes
//	headers   uvarint count, then per header: key and value as above
//
// The spool frames and checksums each record; this encoding only has to
// reject what it cannot parse.

const spooledVersion = 1

// maxSpooledHeaders bounds the header count read back, so a damaged count
// cannot make the decoder allocate without limit.
const maxSpooledHeaders = 1 << 12

var errSpooled = errors.New("record: undecodable spooled record")

// AppendSpooled appends the spooled form of r to dst.
func AppendSpooled(dst []byte, r *kgo.Record) []byte {
	dst = append(dst, spooledVersion)
	dst = appendString(dst, r.Topic)
	dst = appendBytes(dst, r.Key)
	dst = appendBytes(dst, r.Value)
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = appendString(dst, h.Key)
		dst = appendBytes(dst, h.Value)
	}
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// DecodeSpooled parses a record written by AppendSpooled. The record's
// slices share one private copy of b: b may be reused.
func DecodeSpooled(b []byte) (*kgo.Record, error) {
	return DecodeSpooledInPlace(bytes.Clone(b))
}

// DecodeSpooledInPlace is DecodeSpooled for a b the caller gives away (a
// spool Entry's Data): the record's slices point into b itself.
func DecodeSpooledInPlace(b []byte) (*kgo.Record, error) {
	d := spooledDecoder{b: b}
	if v := d.byte(); v != spooledVersion {
		return nil, fmt.Errorf("%w: version %d", errSpooled, v)
	}
	// One allocation holds the record and the headers of a usual event;
	// the topic is b's bytes, which nothing writes to, as the key and
	// value are.
	rh := new(recordWithHeaders)
	r := &rh.Record
	topic := d.bytes()
	r.Topic = unsafe.String(unsafe.SliceData(topic), len(topic))
	r.Key = d.bytes()
	r.Value = d.bytes()
	n := d.uvarint()
	if n > maxSpooledHeaders {
		return nil, fmt.Errorf("%w: %d headers", errSpooled, n)
	}
	r.Headers = rh.headers[:0]
	if n > uint64(len(rh.headers)) {
		r.Headers = make([]kgo.RecordHeader, 0, n)
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := d.bytes()
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: headerKey(k), Value: d.bytes()})
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errSpooled, len(d.b))
	}
	if r.Topic == "" {
		return nil, fmt.Errorf("%w: no topic", errSpooled)
	}
	return r, nil
}

type spooledDecoder struct {
	b   []byte
	err error
}

func (d *spooledDecoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail("short")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *spooledDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 || (n > 1 && d.b[n-1] == 0) { // unparseable, or not minimal
		d.fail("bad length")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *spooledDecoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("length past the end")
		return nil
	}
	if n == 0 {
		d.b = d.b[:len(d.b):len(d.b)]
		return nil
	}
	out := d.b[:n:n]
	d.b = d.b[n:]
	return out
}

// headerKey returns sluice's own header names without allocating.
func headerKey(k []byte) string {
	switch string(k) {
	case HeaderEventID:
		return HeaderEventID
	case HeaderEventType:
		return HeaderEventType
	case HeaderSource:
		return HeaderSource
	case HeaderOccurredAt:
		return HeaderOccurredAt
	case HeaderIngestedAt:
		return HeaderIngestedAt
	case HeaderFingerprint:
		return HeaderFingerprint
	case HeaderTraceparent:
		return HeaderTraceparent
	case HeaderTracestate:
		return HeaderTracestate
	}
	return string(k)
}

func (d *spooledDecoder) fail(why string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errSpooled, why)
	}
}
