package secret

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// defaultMaxBytes bounds a secret unless WithMaxBytes says otherwise.
const defaultMaxBytes = 4096

// checkInterval is how often Current may stat a file for a change.
const checkInterval = time.Second

// Source names where a secret is: File or Env, one of them.
type Source struct {
	// File holds the secret; read again when it changes.
	File string
	// Env names the environment variable that holds it; read once.
	Env string
}

// String names the source (never its secret), for logs and errors.
func (s Source) String() string {
	if s.File != "" {
		return "file " + s.File
	}
	return "environment variable " + s.Env
}

// Option configures Load.
type Option interface{ apply(*options) }

type options struct {
	now      func() time.Time
	log      *slog.Logger
	getenv   func(string) string
	maxBytes int
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock replaces time.Now for the once-a-second check of a file.
func WithClock(now func() time.Time) Option { return optionFunc(func(o *options) { o.now = now }) }

// WithLogger replaces slog.Default() for the reload logs. A nil logger
// keeps it.
func WithLogger(l *slog.Logger) Option {
	return optionFunc(func(o *options) {
		if l != nil {
			o.log = l
		}
	})
}

// WithGetenv replaces os.Getenv for a Source's Env.
func WithGetenv(getenv func(string) string) Option {
	return optionFunc(func(o *options) { o.getenv = getenv })
}

// WithMaxBytes replaces defaultMaxBytes: a secret longer than n bytes
// (after a file's line ending is trimmed) is refused.
func WithMaxBytes(n int) Option { return optionFunc(func(o *options) { o.maxBytes = n }) }

// Loaded is a secret as last read, parsed into T; see the package doc.
type Loaded[T any] struct {
	name  string
	path  string // "" for a secret from the environment
	parse func([]byte) (T, error)
	now   func() time.Time
	log   *slog.Logger
	max   int

	current atomic.Pointer[held[T]]
	// nextCheck is when Current may stat the file again (Unix ns).
	nextCheck atomic.Int64
	// checking lets one caller check; the others get current meanwhile.
	checking sync.Mutex
	// file is the file as last stat'ed, nil when it was not there; guarded
	// by checking.
	file os.FileInfo
}

// held is one parsed secret and the digest of the bytes it came from, so
// that a file rewritten with the same bytes is not a reload.
type held[T any] struct {
	value  T
	digest [sha256.Size]byte
}

// Load reads the secret src names and parses it. name says what it is in
// logs ("admin: token"). Its errors name the file or the variable, never
// the secret.
func Load[T any](name string, src Source, parse func([]byte) (T, error), opts ...Option) (*Loaded[T], error) {
	o := options{now: time.Now, log: slog.Default(), getenv: os.Getenv, maxBytes: defaultMaxBytes}
	for _, opt := range opts {
		opt.apply(&o)
	}
	l := &Loaded[T]{name: name, path: src.File, parse: parse, now: o.now, log: o.log, max: o.maxBytes}
	switch {
	case src.File != "" && src.Env != "":
		return nil, errors.New("secret: a source is a file or an environment variable, not both")
	case src.Env != "":
		v := o.getenv(src.Env)
		if v == "" {
			return nil, fmt.Errorf("environment variable %s is empty or unset", src.Env)
		}
		h, err := l.hold([]byte(v))
		if err != nil {
			return nil, fmt.Errorf("environment variable %s: %w", src.Env, err)
		}
		l.current.Store(h)
		return l, nil
	case src.File != "":
		fi, b, err := l.read()
		if err != nil {
			return nil, err
		}
		h, err := l.hold(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.path, err)
		}
		l.file = fi
		l.current.Store(h)
		l.nextCheck.Store(l.now().Add(checkInterval).UnixNano())
		return l, nil
	}
	return nil, errors.New("secret: a source names a file or an environment variable")
}

// Current is the secret as last read: a file's is read again first when
// it changed and the interval has passed.
func (l *Loaded[T]) Current() T {
	if l.path != "" {
		l.check()
	}
	return l.current.Load().value
}

// check reads the file again when it changed; see the package doc.
func (l *Loaded[T]) check() {
	if l.now().UnixNano() < l.nextCheck.Load() || !l.checking.TryLock() {
		return
	}
	defer l.checking.Unlock()
	now := l.now()
	if now.UnixNano() < l.nextCheck.Load() {
		return
	}
	l.nextCheck.Store(now.Add(checkInterval).UnixNano())
	fi, err := os.Stat(l.path)
	if err != nil {
		if l.file != nil {
			l.log.Error(l.name+" file unreadable; the one before is kept", "file", l.path, "err", err)
			l.file = nil
		}
		return
	}
	if l.file != nil && os.SameFile(fi, l.file) && fi.Size() == l.file.Size() && fi.ModTime().Equal(l.file.ModTime()) {
		return
	}
	// Remembered even when the read fails: a broken file is tried once,
	// and again when it changes.
	l.file = fi
	read, b, err := l.read()
	if err != nil {
		l.log.Error(l.name+" file reload failed; the one before is kept", "file", l.path, "err", err)
		return
	}
	l.file = read
	if sha256.Sum256(b) == l.current.Load().digest {
		return
	}
	h, err := l.hold(b)
	if err != nil {
		l.log.Error(l.name+" file reload failed; the one before is kept", "file", l.path, "err", fmt.Errorf("%s: %w", l.path, err))
		return
	}
	l.current.Store(h)
	l.log.Info(l.name+" reloaded", "file", l.path)
}

// hold checks b's length and parses it.
func (l *Loaded[T]) hold(b []byte) (*held[T], error) {
	switch {
	case len(b) == 0:
		return nil, errors.New("the secret is empty")
	case len(b) > l.max:
		return nil, fmt.Errorf("the secret is longer than %d bytes", l.max)
	}
	v, err := l.parse(b)
	if err != nil {
		return nil, err
	}
	return &held[T]{value: v, digest: sha256.Sum256(b)}, nil
}

// read reads the file: at most its bound and a line ending (and one byte
// more, to tell that it is longer), which is trimmed. A path that is not a
// regular file is refused before it is opened, so that a FIFO cannot
// block the read.
func (l *Loaded[T]) read() (os.FileInfo, []byte, error) {
	if fi, err := os.Stat(l.path); err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", l.path)
	}
	f, err := os.Open(l.path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s is not a regular file", l.path)
	}
	b := make([]byte, l.max+3)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil, err
	}
	b = b[:n]
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	return fi, b, nil
}
