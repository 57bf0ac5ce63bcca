//go:build unix

package client

import (
	"fmt"
	"os"
	"syscall"
)

// checkSocketOwner fails when the unix socket at path belongs to another
// user: whoever can create the socket's path while no daemon runs (a
// shared /tmp) would receive the token. A missing socket is no error here:
// the call reports it.
func checkSocketOwner(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("client: dial unix://%s: the socket belongs to uid %d, not to you (uid %d): not sending the token to it", path, st.Uid, os.Getuid())
	}
	return nil
}
