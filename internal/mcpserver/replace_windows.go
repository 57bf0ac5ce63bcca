//go:build windows

package mcpserver

import (
	"os"
	"path/filepath"
)

// replaceFile writes data to path whole or not at all: a temporary file
// beside it, synced, renamed over it (renameio has no Windows support;
// os.Rename replaces the file there).
func replaceFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// nonBlocking and appendFlags: Windows has neither FIFOs nor O_NOFOLLOW
// (see openRegular, appendFile).
const (
	nonBlocking = 0
	appendFlags = 0
)
