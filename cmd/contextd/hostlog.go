package main

import (
	"context"
	"log/slog"
)

// hostLogKeys are the attributes contextd mcp's log keeps below debug level:
// names of contextd's own choosing, and what its own files say (their
// paths, an entry count, a file system's error: the state files in
// data_dir).
var hostLogKeys = map[string]bool{"server": true, "component": true, "config": true, "setting": true, "file": true, "entries": true, "fs_err": true}

// hostLog is the handler of contextd mcp's log, which goes to the MCP host
// (its server log, which an agent may read): the host's side is a caller,
// and what servers and the embedder say (in errors, stderr, messages) is
// withheld from callers, masked or not, since masking would tell which
// words are secrets. It keeps each record's message and the attributes in
// hostLogKeys; --log-level debug, asked for by the user, keeps everything.
type hostLog struct{ h slog.Handler }

func (l hostLog) Enabled(ctx context.Context, lv slog.Level) bool { return l.h.Enabled(ctx, lv) }

func (l hostLog) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if hostLogKeys[a.Key] {
			out.AddAttrs(a)
		}
		return true
	})
	return l.h.Handle(ctx, out)
}

func (l hostLog) WithAttrs(as []slog.Attr) slog.Handler {
	var kept []slog.Attr
	for _, a := range as {
		if hostLogKeys[a.Key] {
			kept = append(kept, a)
		}
	}
	return hostLog{l.h.WithAttrs(kept)}
}

func (l hostLog) WithGroup(name string) slog.Handler { return hostLog{l.h.WithGroup(name)} }
