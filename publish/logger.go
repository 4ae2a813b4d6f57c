package publish

import (
	"context"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kgo"
)

// kgoLogger writes franz-go's logs to a slog.Logger: its errors and
// warnings as such, its info and debug lines at debug. Its level is the
// most verbose one the handler had enabled when the producer was created.
type kgoLogger struct {
	l     *slog.Logger
	level kgo.LogLevel
}

func newKgoLogger(l *slog.Logger) kgoLogger {
	ctx := context.Background()
	level := kgo.LogLevelNone
	for _, lv := range [...]kgo.LogLevel{kgo.LogLevelError, kgo.LogLevelWarn, kgo.LogLevelInfo, kgo.LogLevelDebug} {
		if l.Enabled(ctx, slogLevel(lv)) {
			level = lv
		}
	}
	return kgoLogger{l: l, level: level}
}

func (k kgoLogger) Level() kgo.LogLevel { return k.level }

func (k kgoLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	k.l.Log(context.Background(), slogLevel(level), msg, keyvals...)
}

func slogLevel(l kgo.LogLevel) slog.Level {
	switch l {
	case kgo.LogLevelError:
		return slog.LevelError
	case kgo.LogLevelWarn:
		return slog.LevelWarn
	default:
		// franz-go's info lines are about connections and metadata
		// refreshes: debugging detail for sluice's operators.
		return slog.LevelDebug
	}
}
