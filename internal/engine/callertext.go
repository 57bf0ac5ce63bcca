package engine

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	gosync "sync"
)

// callerTextName is the file in data_dir that remembers which servers
// were sent a caller's words.
const callerTextName = "caller-text"

// maxCallerTextBytes bounds what is read of that file: 64 bytes a server
// for far more servers than a configuration holds.
const maxCallerTextBytes = 1 << 20

// callerTextFile remembers, across contextd's restarts, which servers were
// sent a caller's words (a pin they do not list, a template's value): such
// a server may remember them across restarts as across sessions, so what
// it says stays withheld. It holds hex SHA-256s, one a line, of each such
// server's serverTarget and name, not the target itself, which may hold a
// credential. A file that cannot be written is logged; the server is
// withheld for this run anyway. Deleting the file (contextd stopped) shows
// every server's own words again.
type callerTextFile struct {
	path string
	log  *slog.Logger
	mu   gosync.Mutex
	have map[string]bool // by hash
}

// openCallerText reads data_dir's file (none yet is none sent).
func openCallerText(dataDir string, log *slog.Logger) *callerTextFile {
	f := &callerTextFile{path: filepath.Join(dataDir, callerTextName), log: log, have: map[string]bool{}}
	file, err := os.Open(f.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("cannot read which servers were sent callers' words; treating none as sent", "file", f.path, "err", err)
		}
		return f
	}
	defer file.Close()
	sc := bufio.NewScanner(io.LimitReader(file, maxCallerTextBytes))
	for sc.Scan() {
		if h := strings.TrimSpace(sc.Text()); len(h) == sha256.Size*2 {
			f.have[h] = true
		}
	}
	return f
}

// keyHash returns the hex SHA-256 of key, as the file holds it.
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// has reports whether any of the server's keys (serverTarget, its name)
// was recorded.
func (f *callerTextFile) has(keys ...string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		if f.have[keyHash(k)] {
			return true
		}
	}
	return false
}

// add records keys, writing the file anew (0600, replaced whole) when one
// is new.
func (f *callerTextFile) add(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	added := false
	for _, k := range keys {
		if h := keyHash(k); !f.have[h] {
			f.have[h], added = true, true
		}
	}
	if !added {
		return
	}
	hashes := make([]string, 0, len(f.have))
	for h := range f.have {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	tmp := f.path + ".tmp"
	err := os.WriteFile(tmp, []byte(strings.Join(hashes, "\n")+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, f.path)
	}
	if err != nil {
		f.log.Warn("cannot record that a server was sent a caller's words; after a restart what it says is shown masked again", "file", f.path, "err", err)
	}
}
