//go:build !windows

package engine

import (
	"fmt"
	"os"
	"syscall"
)

// tightenDir makes dir, which holds the index (upstream resources' text),
// reachable by its owner only. A dir that already is, or that another
// user owns, is left alone. It returns dir's mode before, and whether it
// was changed; a dir others can reach that this process does not own
// returns changed false and a nil error, for the caller to warn of.
func tightenDir(dir string) (before os.FileMode, changed bool, err error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, false, err
	}
	before = fi.Mode().Perm()
	if before&0o077 == 0 {
		return before, false, nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
		return before, false, nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return before, false, fmt.Errorf("data_dir %s: %w", dir, err)
	}
	return before, true, nil
}
