package main

import (
	"strings"
	"testing"
)

// TestDocsMatch: the comparison of TestDocsRun ignores what changes from
// run to run (times, partitions, offsets, durations, padding, <...>) and
// nothing else.
func TestDocsMatch(t *testing.T) {
	page := `{"results":[{"index":0,"id":"log-1","outcome":"ACCEPTED","durability":"KAFKA","kafka":{"topic":"t","partition":2,"offset":"0"}}]}
IN_SINK  demo/log-1: written at 2026-12-05T05:16:07.897395552Z from t/2@0
ord-1     cust-1042  2026-12-05T05:16:07Z  t[0]@0   took 3.2ms, id <uuid>
log-1     t[2]@0  {"service":"checkout-api", "severity":"SEVERITY_INFO", "message":"hello", "ti…
`
	for _, tc := range []struct {
		name, got string
		want      bool
	}{
		{"the same", page, true},
		{"other times, partitions, offsets, durations, padding, id and payload spacing", `{"results":[{"index":0,"id":"log-1","outcome":"ACCEPTED","durability":"KAFKA","kafka":{"topic":"t","partition":0,"offset":"17"}}]}
IN_SINK  demo/log-1: written at 2027-01-01T00:00:00.1Z from t/0@17
ord-1     cust-1042  2027-01-01T00:00:00Z  t[1]@123     took 41µs, id 0193-abc
log-1     t[0]@9  {"service":"checkout-api","severity":"SEVERITY_INFO","message":"hello","timesta…

`, true},
		{"another outcome", strings.Replace(page, "ACCEPTED", "DUPLICATE", 1), false},
		{"another status", strings.Replace(page, "IN_SINK", "PENDING", 1), false},
		{"a line missing", page[:strings.LastIndex(strings.TrimSuffix(page, "\n"), "\n")+1], false},
		{"a line more", page + "and more\n", false},
		{"another key", strings.Replace(page, "cust-1042", "cust-7", 1), false},
		{"another topic", strings.Replace(page, "t[0]@0", "u[0]@0", 1), false},
		{"an empty hole", strings.Replace(page, "<uuid>", "", 1), false},
	} {
		if got := docsMatch(page, tc.got); got != tc.want {
			t.Errorf("%s: docsMatch = %v, want %v\n%s", tc.name, got, tc.want, docsNormalise(tc.got))
		}
	}
}

// TestDocsBlocks: a text block is compared only when it directly follows
// a sh block (blank lines aside), not after prose.
func TestDocsBlocks(t *testing.T) {
	page := "# p\n\n```sh\necho a\n```\n```text\na\n```\n\nprose\n\n```text\nbanner\n```\n```sh\necho b\n```\n\n```text\nb\n```\n"
	blocks := docsBlocks(page)
	var got []string
	for _, b := range blocks {
		f := "-"
		if b.follows {
			f = "follows"
		}
		got = append(got, b.lang+":"+f+":"+b.text)
	}
	want := []string{"sh:-:echo a\n", "text:follows:a\n", "text:-:banner\n", "sh:follows:echo b\n", "text:follows:b\n"}
	if len(got) != len(want) {
		t.Fatalf("blocks %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: %q, want %q", i, got[i], want[i])
		}
	}
}
