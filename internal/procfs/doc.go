// Package procfs reads what sluice's load tools measure of a process from
// Linux's /proc: CPU time from /proc/PID/stat and memory from
// /proc/PID/status. Every parser returns a *Error for a file that does not
// read as expected, never a panic or a negative value (fuzzed).
package procfs
