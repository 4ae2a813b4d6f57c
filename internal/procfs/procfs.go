package procfs

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space whatever the kernel's tick rate.
const userHZ = 100

// Error is a /proc file that does not read as expected.
type Error struct {
	File string
	Msg  string
}

func (e *Error) Error() string { return "procfs: " + e.File + ": " + e.Msg }

// parseStat returns utime+stime of a /proc/PID/stat line. The command
// name (field 2) is in parentheses and may hold spaces and parentheses, so
// fields are counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, &Error{File: "stat", Msg: "no ')' after the command name"}
	}
	// After ')': state is field 3, utime field 14, stime field 15.
	fields := bytes.Fields(b[end+1:])
	if len(fields) < 13 {
		return 0, &Error{File: "stat", Msg: fmt.Sprintf("%d fields after the command name, want >= 13", len(fields))}
	}
	var ticks uint64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(string(f), 10, 63)
		if err != nil {
			return 0, &Error{File: "stat", Msg: "cpu time " + strconv.Quote(string(f)) + " is not a count"}
		}
		ticks += n
	}
	if ticks > uint64(1<<62)/uint64(time.Second/userHZ) {
		return 0, &Error{File: "stat", Msg: "cpu time out of range"}
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// parseStatusKB returns the "<n> kB" field of a /proc/PID/status file
// (VmRSS, VmHWM, ...), in bytes.
func parseStatusKB(b []byte, field string) (int64, error) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte(field+":"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, &Error{File: "status", Msg: field + " is not \"<n> kB\""}
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64>>10 { // its bytes must fit an int64
			return 0, &Error{File: "status", Msg: field + " " + strconv.Quote(string(f[0])) + " is not a size"}
		}
		return kb << 10, nil
	}
	return 0, &Error{File: "status", Msg: "no " + field + " line"}
}

// CPU reads the user+system CPU time process pid has used.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStat(b)
}

// Memory is what a process holds in memory, in bytes.
type Memory struct {
	RSS  int64 // VmRSS: resident now
	Peak int64 // VmHWM: the most the process has ever had resident
}

// ReadMemory reads /proc/PID/status.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	rss, err := parseStatusKB(b, "VmRSS")
	if err != nil {
		return Memory{}, err
	}
	peak, err := parseStatusKB(b, "VmHWM")
	if err != nil {
		return Memory{}, err
	}
	return Memory{RSS: rss, Peak: peak}, nil
}
