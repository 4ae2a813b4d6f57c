package admission

import (
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sluicehq/sluice/buffer"
	"github.com/sluicehq/sluice/internal/share"
	"github.com/sluicehq/sluice/record"
)

// SourceFullError is a record refused because its source holds its share
// of the spool: its guarantee and what it may borrow of the shared
// remainder now. It wraps buffer.ErrFull, so it is RefusedFull, with a
// RetryAfter; other sources' records are still spooled.
type SourceFullError struct {
	// Source is the record's source (its sluice-source header).
	Source string
	// Guaranteed is false for a source that has no share of its own (not
	// configured): it may only borrow from the shared remainder.
	Guaranteed bool
	// Held is what of the spool the source holds, in framed bytes.
	Held int64
	// Limit is the most it could hold now: its guarantee and the shared
	// remainder nobody else has borrowed.
	Limit int64
	// Need is the framed bytes of the refused record.
	Need int64
}

func (e *SourceFullError) Error() string {
	what := "its share of the spool"
	if !e.Guaranteed {
		what = "what it may borrow of the spool (it has no share of its own)"
	}
	return fmt.Sprintf("admission: source %q is at %s: it holds %d bytes, may hold %d now, the record needs %d",
		e.Source, what, e.Held, e.Limit, e.Need)
}

// Unwrap returns buffer.ErrFull.
func (e *SourceFullError) Unwrap() error { return buffer.ErrFull }

// spoolShares is the spool's bytes as a share.Pool per source. A record is
// charged its framed bytes (buffer.FrameBytes) to its source when it is
// appended, and given back when the drainer has published it; an append
// that fails gives its charge back at once.
//
// Its capacity is the spool's MaxBytes less one segment (but at least
// half of MaxBytes): a segment's file stays until every record in it is
// acknowledged, so the disk holds up to a segment more than the records
// not yet published. With that room set aside, a source within its
// guarantee is not refused by the spool's own cap either (when MaxBytes is
// at least two segments, as by default). With one source there is nobody
// to set it aside for, and the capacity is MaxBytes.
//
// What is in the spool at start is charged to the source of each record
// (buffer.Spool.Pending, before admission appends or drains), whatever
// the shares say: a source that filled its share before a restart is
// still at it after, and the others keep their guarantees.
type spoolShares struct {
	pool *share.Pool
	// tenants are the configured sources' accounts; every other source
	// name goes to other, without a guarantee, so the accounts and the
	// metric's series are bounded by the configuration.
	tenants map[string]*share.Tenant
	other   *share.Tenant
	desc    *prometheus.Desc
}

// spoolSharesCapacity is the pool's capacity for a spool of cfg shared by
// sources sources.
func spoolSharesCapacity(cfg buffer.Config, sources int) int64 {
	if sources <= 1 {
		return cfg.MaxBytes
	}
	// A spool of one or two segments keeps at least half for the records.
	return max(cfg.MaxBytes-cfg.SegmentBytes, cfg.MaxBytes/2)
}

func newSpoolShares(cfg buffer.Config, reserved float64, weights map[string]float64) (*spoolShares, error) {
	pool, err := share.New(spoolSharesCapacity(cfg, len(weights)), reserved, weights)
	if err != nil {
		return nil, fmt.Errorf("admission: the spool's shares: %w", err)
	}
	s := &spoolShares{
		pool: pool, tenants: make(map[string]*share.Tenant, len(weights)),
		desc: prometheus.NewDesc("sluice_source_spool_bytes",
			"Bytes of the spool held by each configured source's records not yet published (framed, as the spool stores them).",
			[]string{"source"}, nil),
	}
	for name := range weights {
		s.tenants[name] = pool.Tenant(name)
	}
	// "" is never a configured source's name.
	s.other = pool.Tenant("")
	return s, nil
}

// warnSmall logs each configured source whose share (its guarantee and
// the whole remainder) cannot hold one record of the spool's largest:
// such a record of it is refused BUFFER_FULL whenever it must be spooled.
func (s *spoolShares) warnSmall(cfg buffer.Config, log *slog.Logger) {
	largest := buffer.FrameBytes(cfg.MaxRecordBytes)
	for name, t := range s.tenants {
		if most := t.Guarantee() + s.pool.Shared(); most < largest {
			log.Warn("admission: a source's share of the spool is smaller than the largest record the spool takes; its larger records are refused BUFFER_FULL while records are spooled",
				"source", name, "share_bytes", most, "max_record_bytes", cfg.MaxRecordBytes)
		}
	}
}

// tenant is the account of source.
func (s *spoolShares) tenant(source string) *share.Tenant {
	if t, ok := s.tenants[source]; ok {
		return t
	}
	return s.other
}

// tenantOf is the account of r's source.
func (s *spoolShares) tenantOf(r *kgo.Record) *share.Tenant { return s.tenant(sourceOf(r)) }

// sourceOf is r's sluice-source header, "" when it has none.
func sourceOf(r *kgo.Record) string {
	for _, h := range r.Headers {
		if h.Key == record.HeaderSource {
			return string(h.Value)
		}
	}
	return ""
}

// chargePending charges every record in spool to its source. A record
// that does not decode is charged to nobody: the drainer skips it.
func (s *spoolShares) chargePending(spool *buffer.Spool) error {
	return spool.Pending(func(e buffer.Entry) error {
		if r, err := record.DecodeSpooledInPlace(e.Data); err == nil {
			s.tenantOf(r).Charge(buffer.FrameBytes(len(e.Data)))
		}
		return nil
	})
}

// Describe and Collect make sluice_source_spool_bytes{source}, one series
// per configured source, read from the accounts when scraped.
func (s *spoolShares) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }

func (s *spoolShares) Collect(ch chan<- prometheus.Metric) {
	for name, t := range s.tenants {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(t.Used()), name)
	}
}

// spoolCharge is what one spooled record was charged to whom.
type spoolCharge struct {
	tenant *share.Tenant
	bytes  int64
}
