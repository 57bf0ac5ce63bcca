package engine

import (
	"errors"
	"testing"
)

// A second lock on a held data_dir fails with errLocked, whoever holds it,
// and unlocking lets the next one in.
func TestLockDirExcludesASecondHolder(t *testing.T) {
	dir := t.TempDir()
	unlock, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDir(dir); !errors.Is(err, errLocked) {
		t.Fatalf("second lock: %v, want errLocked", err)
	}
	unlock()
	unlock2, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}
