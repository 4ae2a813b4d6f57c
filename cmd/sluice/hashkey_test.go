package main

import (
	"bytes"
	"strings"
	"testing"
)

// `sluice hash-key -` reads the key from standard input, one trailing
// line ending dropped, and refuses an empty or many-line one.
func TestHashKeyFromStdin(t *testing.T) {
	for _, tc := range []struct {
		stdin   string
		want    string // the key hashed; "" for an error
		errWant string
	}{
		{stdin: "s3cret\n", want: "s3cret"},
		{stdin: "s3cret\r\n", want: "s3cret"},
		{stdin: "s3cret", want: "s3cret"},
		{stdin: "", errWant: "empty"},
		{stdin: "\n", errWant: "empty"},
		{stdin: "one\ntwo\n", errWant: "more than one line"},
		{stdin: strings.Repeat("k", maxKeyBytes+1), errWant: "longer than"},
	} {
		var stdout bytes.Buffer
		err := runHashKeyCmd([]string{"-"}, strings.NewReader(tc.stdin), &stdout)
		switch {
		case tc.want != "":
			if err != nil || strings.TrimSpace(stdout.String()) != hashKey(tc.want) {
				t.Errorf("stdin %q: %v, printed %q, want the hash of %q", tc.stdin, err, stdout.String(), tc.want)
			}
		case err == nil || !strings.Contains(err.Error(), tc.errWant):
			t.Errorf("stdin %q: err %v, want one saying %q", tc.stdin, err, tc.errWant)
		}
	}
	// A key as an argument is hashed as it is, and stdin is not read.
	var stdout bytes.Buffer
	if err := runHashKeyCmd([]string{"k1"}, strings.NewReader("other\n"), &stdout); err != nil || strings.TrimSpace(stdout.String()) != hashKey("k1") {
		t.Errorf("hash-key k1: %v %q", err, stdout.String())
	}
}
