package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// --help of the commands that run from a config file lists their flags
// with defaults and points at `sluice config defaults` and docs/config.md,
// on stdout, with exit status 0; a bad flag prints the usage on stderr.
func TestHelpListsFlagsAndPointsAtConfigDefaults(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{"gateway", []string{"usage: sluice gateway --config FILE", "-config string", "sluice config defaults", "docs/config.md"}},
		{"consumer", []string{"usage: sluice consumer --config FILE", "-config string", "sluice config defaults", "docs/config.md"}},
		{"dev", []string{"usage: sluice dev", "-http string", `(default "127.0.0.1:8080")`, "-refuse-ids string", `(default "reject-")`, "-config string"}},
		{"trace", []string{"usage:", "-max-records int", "(default 100000)"}},
	} {
		for _, flag := range []string{"--help", "-h"} {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{tc.cmd, flag}, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != 0 || stderr.Len() != 0 {
				t.Errorf("sluice %s %s: exit %d, stderr %q", tc.cmd, flag, code, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("sluice %s %s: stdout lacks %q:\n%s", tc.cmd, flag, w, stdout.String())
				}
			}
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{tc.cmd, "--no-such-flag"}, &stdout, &stderr)
		if code := exitCode(err, &stderr); code != 2 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "usage") {
			t.Errorf("sluice %s --no-such-flag: exit %d, stdout %q, stderr %q", tc.cmd, code, stdout.String(), stderr.String())
		}
	}
}
