package procfs

import (
	"errors"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// Fields after the name: state ppid pgrp session tty tpgid flags minflt
	// cminflt majflt cmajflt utime stime ...
	const tail = " S 1 2 3 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 5 0 123 456 789"
	for _, tc := range []struct {
		name, line string
		want       time.Duration
		err        bool
	}{
		{"plain", "1234 (sluice)" + tail, 3250 * time.Millisecond, false},
		{"name with spaces and parens", "1234 (a (b) c)" + tail, 3250 * time.Millisecond, false},
		{"no name", "1234 sluice" + tail, 0, true},
		{"short", "1234 (sluice) S 1 2 3", 0, true},
		{"negative", "1234 (sluice) S 1 2 3 0 -1 4194560 100 0 0 0 -250 75", 0, true},
		{"not a number", "1234 (sluice) S 1 2 3 0 -1 4194560 100 0 0 0 x 75", 0, true},
		{"huge", "1234 (sluice) S 1 2 3 0 -1 4194560 100 0 0 0 4611686018427387903 75", 0, true},
	} {
		got, err := parseStat([]byte(tc.line))
		var pe *Error
		if tc.err != (err != nil) || (err != nil && !errors.As(err, &pe)) {
			t.Errorf("%s: err %v, want a ProcError: %v", tc.name, err, tc.err)
		}
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestParseStatusKB(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       int64
		err        bool
	}{
		{"real", "Name:\tsluice\nVmPeak:\t  900 kB\nVmRSS:\t   51200 kB\nThreads:\t7\n", 50 << 20, false},
		{"missing", "Name:\tsluice\n", 0, true},
		{"no unit", "VmRSS:\t51200\n", 0, true},
		{"not a number", "VmRSS:\tlots kB\n", 0, true},
		{"negative", "VmRSS:\t-1 kB\n", 0, true},
	} {
		got, err := parseStatusKB([]byte(tc.text), "VmRSS")
		if tc.err != (err != nil) || got != tc.want {
			t.Errorf("%s: %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1234 (sluice) S 1 2 3 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 5 0 123 456 789"))
	f.Add([]byte("1 ((() S 1 2 3 0 -1 4194560 100 0 0 0 18446744073709551615 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseStat(b)
		if err == nil && d < 0 {
			t.Fatalf("negative cpu time %v", d)
		}
	})
}

func FuzzParseStatusKB(f *testing.F) {
	f.Add([]byte("Name:\tsluice\nVmRSS:\t   51200 kB\n"))
	f.Add([]byte("VmRSS: 9007199254740993 kB"))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseStatusKB(b, "VmRSS")
		if err == nil && n < 0 {
			t.Fatalf("negative RSS %d", n)
		}
	})
}

func TestParseStatusKBOtherFields(t *testing.T) {
	status := []byte("Name:\tsluice\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n")
	if n, err := parseStatusKB(status, "VmHWM"); err != nil || n != 200<<20 {
		t.Errorf("VmHWM: %d, %v", n, err)
	}
	if _, err := parseStatusKB(status, "VmSwap"); err == nil {
		t.Error("a missing field: no error")
	}
}
