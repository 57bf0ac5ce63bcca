package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// errLocked means another process holds data_dir.
var errLocked = errors.New("data_dir is locked by another process")

// lockDir takes an exclusive advisory lock (flock) on dir/contextd.lock, so
// two processes never write one persistent index. The lock goes with the
// process, so a crash never leaves it stale.
func lockDir(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "contextd.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data_dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("data_dir: lock %s: %w", f.Name(), err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
