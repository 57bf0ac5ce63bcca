//go:build !windows

package mcpserver

import (
	"path/filepath"
	"syscall"

	"github.com/google/renameio/v2"
)

// replaceFile writes data to path whole or not at all (a temporary file
// beside it, synced, renamed over it), mode 0600 whatever mode a file
// there had (renameio.WriteFile would keep that one's).
func replaceFile(path string, data []byte) error {
	f, err := renameio.NewPendingFile(path, renameio.WithStaticPermissions(0o600), renameio.WithTempDir(filepath.Dir(path)))
	if err != nil {
		return err
	}
	defer f.Cleanup()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.CloseAtomicallyReplace()
}

// nonBlocking opens a FIFO without waiting for its other end (see
// openRegular); appendFlags open a file to append to without following a
// symbolic link either (see appendFile).
const (
	nonBlocking = syscall.O_NONBLOCK
	appendFlags = syscall.O_NOFOLLOW | nonBlocking
)
