// Package secret is how sluice reads a secret it is configured with: from
// a file, read again when the file changes, or from an environment
// variable, read once. The admin listener's bearer token and the signing
// secrets of webhook sources are read this way; config text never holds
// a secret.
//
// # Loading
//
// Load reads the secret a Source names and hands its bytes to a parse
// function, whose result (a digest, a decoded key) is what Current
// returns. A file's one trailing line ending ("\n", "\r\n" or "\r") is
// trimmed, so `echo KEY > file` works; nothing else is. An environment variable's
// value is taken as it is. A file must be a regular file (a symlink to
// one, as Kubernetes mounts a Secret, is followed) of at most MaxBytes
// bytes after the trim; an empty value is refused. A secret that cannot
// be read or parsed fails Load: a start-up stops on it.
//
// # Reload
//
// A file is checked again by Current, at most once per checkInterval (a
// second): when its identity, size or modification time changed, it is
// read and parsed again. Then:
//
//   - a read and parse that succeed serve every later Current; the change
//     is logged ("<name> reloaded") when the bytes differ;
//   - a file that is gone, unreadable or holds what parse refuses keeps
//     the secret before, as a listener keeps its certificate: the failure
//     is logged once, and tried again only when the file changes again.
//
// No goroutine is started: a secret nobody uses reads nothing, and the
// first Current after a change (and after the interval has passed) finds
// it. One caller checks at a time; the others meanwhile get the secret
// before, without waiting. Replace a file by rename (write a temporary
// file beside it, rename it over), as a Secret's mount swaps it, so that
// no reader sees it half written.
//
// # What it never does
//
// Neither the secret nor anything derived from it is logged, nor put in
// an error: errors name the file or the variable and say what is wrong
// (its length, an offset), and parse functions must keep to the same
// rule. An environment variable is not read again.
package secret
