package sink

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"
)

// benchWrite writes b.N events in batches of size, each batch with new ids,
// and reports events/s.
func benchWrite(b *testing.B, s Sink, size int) {
	ctx := context.Background()
	batch := testEvents(0, size)
	b.ReportAllocs()
	b.ResetTimer()
	written := 0
	for n := 0; written < b.N; n++ {
		for i := range batch {
			batch[i].ID = fmt.Sprintf("bench-%d-%d", n, i)
		}
		if _, err := s.Write(ctx, batch); err != nil {
			b.Fatal(err)
		}
		written += size
	}
	b.ReportMetric(float64(written)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkSQLiteWrite(b *testing.B) {
	for _, size := range []int{1, 100} {
		for _, sync := range []string{"full", "normal"} {
			b.Run(fmt.Sprintf("batch=%d/synchronous=%s", size, sync), func(b *testing.B) {
				cfg := NewDefaultConfig().SQLite
				cfg.Path = b.TempDir() + "/events.db"
				cfg.Synchronous = sync
				s, err := OpenSQLite(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				benchWrite(b, s, size)
			})
		}
	}
}

func BenchmarkHTTPWrite(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusCreated)
	}))
	defer srv.Close()
	for _, size := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			benchWrite(b, openTestHTTP(b, srv.URL, newTestClock(), nil), size)
		})
	}
}

func BenchmarkIntegrationPostgresWrite(b *testing.B) {
	dsn := postgresDSN(b)
	for _, size := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			benchWrite(b, openTestPostgres(b, dsn, newTestClock()), size)
		})
	}
}

// pgBatchSink is the alternative to Postgres.Write's unnest statement that
// BenchmarkIntegrationPostgresInsert compares it with: a pgx.Batch of one
// INSERT per event, pipelined in one round trip and one implicit
// transaction. It inserts only; the benchmark's ids are all new, so
// Postgres.Write never runs its conflicts statement either.
type pgBatchSink struct{ *Postgres }

func (p pgBatchSink) Write(ctx context.Context, batch []Event) ([]Conflict, error) {
	q := fmt.Sprintf(`INSERT INTO %s (%s) VALUES ($1,$2,$3,$4,$5,$6,$7,$8::jsonb,$9,$10,$11,$12,$13,$14) ON CONFLICT (source, event_id) DO NOTHING`, p.table, rowColumns)
	var pb pgx.Batch
	w := p.now()
	for i := range batch {
		e := &batch[i]
		var payload *string
		if len(e.JSON) > 0 {
			s := string(e.JSON)
			payload = &s
		}
		pb.Queue(q, e.ID, e.Type, e.Source, string(e.Key), e.OccurredAt, e.IngestedAt, e.SchemaFingerprint, payload, e.Value, e.Topic, e.Partition, e.Offset, w, e.PayloadFingerprint)
	}
	return nil, p.pool.SendBatch(ctx, &pb).Close()
}

func BenchmarkIntegrationPostgresInsert(b *testing.B) {
	dsn := postgresDSN(b)
	for _, size := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("unnest/batch=%d", size), func(b *testing.B) {
			benchWrite(b, openTestPostgres(b, dsn, newTestClock()), size)
		})
		b.Run(fmt.Sprintf("pgxbatch/batch=%d", size), func(b *testing.B) {
			benchWrite(b, pgBatchSink{openTestPostgres(b, dsn, newTestClock())}, size)
		})
	}
}
