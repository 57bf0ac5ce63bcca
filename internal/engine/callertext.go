package engine

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
)

// callerTextName is the file in data_dir whose presence says that some
// server was sent a caller's words (see Engine.callerText).
const callerTextName = "caller-text"

// callerText is the flag every mirror of an engine shares
// (sync.Options.CallerText): set once any server was sent a caller's words
// (a pin it does not list, a template's value, a value to complete). Any
// server may then quote them: the one sent them, which may remember them
// across sessions and restarts, and any other sharing its state (one
// upstream configured under two names, one host, one disk), which contextd
// cannot tell. So what every server says is withheld from then on. With a
// data_dir of the engine's own, the flag is kept there across restarts.
type callerText struct {
	set  atomic.Bool
	path string // "" keeps it for this run only
	log  *slog.Logger
}

// openCallerText returns the engine's flag, set when dataDir ("" for none)
// records an earlier run's.
func openCallerText(dataDir string, log *slog.Logger) *callerText {
	c := &callerText{log: log}
	if dataDir == "" {
		return c
	}
	c.path = filepath.Join(dataDir, callerTextName)
	switch _, err := os.Lstat(c.path); {
	case err == nil:
		c.set.Store(true)
	case !errors.Is(err, fs.ErrNotExist):
		// Unknown: withheld, as the safe side.
		log.Warn("cannot tell whether a server was sent callers' words before; withholding what servers say", "file", c.path, "err", err)
		c.set.Store(true)
	}
	return c
}

// record keeps the flag in data_dir; called once, when it is first set,
// before the caller's words are sent.
func (c *callerText) record() {
	if c.path == "" {
		return
	}
	if err := os.WriteFile(c.path, []byte("a server was sent a caller's words: what servers say is withheld from callers (delete this file, contextd stopped, to show it again)\n"), 0o600); err != nil {
		c.log.Warn("cannot record that a server was sent a caller's words; after a restart what servers say is shown masked again", "file", c.path, "err", err)
	}
}
