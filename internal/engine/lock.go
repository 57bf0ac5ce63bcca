package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gofrs/flock"
)

// errLocked means another process holds data_dir.
var errLocked = errors.New("data_dir is locked by another process")

// lockDir takes an exclusive advisory lock on dir/contextd.lock (flock(2)
// on unix, LockFileEx on Windows), so two processes never write one
// persistent index. The lock goes with the process, so a crash never
// leaves it stale.
func lockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	l := flock.New(filepath.Join(dir, "contextd.lock"), flock.SetPermissions(0o644))
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("data_dir: lock %s: %w", l.Path(), err)
	}
	if !ok {
		return nil, errLocked
	}
	return func() { _ = l.Close() }, nil
}
