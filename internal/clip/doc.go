// Package clip cuts text to a bound in bytes for logs, error messages,
// envelopes and status documents. What it returns is valid UTF-8, never
// longer than the bound, and cut on a rune boundary.
package clip
