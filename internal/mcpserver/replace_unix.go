//go:build !windows

package mcpserver

import (
	"path/filepath"

	"github.com/google/renameio/v2"
)

// replaceFile writes data to path whole or not at all (a temporary file
// beside it, synced, renamed over it), mode 0600 whatever mode a file
// there had.
func replaceFile(path string, data []byte) error {
	return renameio.WriteFile(path, data, 0o600, renameio.WithStaticPermissions(0o600), renameio.WithTempDir(filepath.Dir(path)))
}
