package utctime

import (
	"bytes"
	"testing"
	"time"
)

// FuzzAppend holds Append to time.Time.AppendFormat with
// Layout, which it replaces on the hot path, for any instant and zone.
func FuzzAppend(f *testing.F) {
	for _, s := range []struct{ sec, nsec, zone int64 }{
		{0, 0, 0},
		{1767225600, 123456789, 3600},
		{-62135596800, 0, 0},          // 0001-01-01
		{253402300799, 999999999, 0},  // 9999-12-31T23:59:59.999999999
		{253402300800, 0, 0},          // year 10000
		{-62167219200 - 1, 0, -19800}, // before year 0
		{951782400, 1, -36000},        // 2000-02-29
	} {
		f.Add(s.sec, s.nsec, s.zone)
	}
	f.Fuzz(func(t *testing.T, sec, nsec, zone int64) {
		at := time.Unix(sec, nsec%1e9).In(time.FixedZone("z", int(zone%(18*3600))))
		want := at.UTC().AppendFormat([]byte("x"), Layout)
		if got := Append([]byte("x"), at); !bytes.Equal(got, want) {
			t.Fatalf("Append(%v) = %q, want %q", at, got, want)
		}
	})
}
