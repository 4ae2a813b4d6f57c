package gateway

import (
	"math"
	"testing"
	"time"
)

func TestParseGRPCTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1H", time.Hour, true},
		{"2M", 2 * time.Minute, true},
		{"30S", 30 * time.Second, true},
		{"250m", 250 * time.Millisecond, true},
		{"7u", 7 * time.Microsecond, true},
		{"1n", time.Nanosecond, true},
		{"0S", 0, true},
		{"99999999999999999H", time.Duration(math.MaxInt64), true},
		{"", 0, false},
		{"S", 0, false},
		{"5", 0, false},
		{"5s", 0, false},
		{"-5S", 0, false},
		{"+5S", 0, false},
		{"garbage", 0, false},
		{"18446744073709551616n", 0, false},
	} {
		got, ok := parseGRPCTimeout(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseGRPCTimeout(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}
