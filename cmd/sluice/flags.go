package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// configPointer is the end of the usage of a command that reads a config
// file: its flags are few, the settings are in the file.
const configPointer = `
Every other setting is in the config file. "sluice config defaults" prints
the whole config with each field's default and comment; docs/config.md
describes each field.
`

// parseFlags parses args into fs, whose usage is head, fs's flags with
// their defaults, then foot. A help flag (-h, --help) prints the usage to
// stdout and returns flag.ErrHelp, which ends the command with status 0;
// any other parse error prints the usage to stderr and returns the error.
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, head, foot string) error {
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprint(w, head)
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
		fmt.Fprint(w, foot)
	}
	// The flag package prints to Output as it parses: silence it, and
	// print the usage where the outcome says.
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
	case err != nil:
		fs.SetOutput(stderr)
		fs.Usage()
	default:
		fs.SetOutput(stderr)
	}
	return err
}
