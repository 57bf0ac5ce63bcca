package client

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// checkPeerOwner fails when the process listening on c's unix socket runs
// as another user (SO_PEERCRED), whoever owns the socket's file.
func checkPeerOwner(c net.Conn, path string) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("client: dial unix://%s: cannot tell who listens on it (%v): not sending the token to it", path, cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("client: dial unix://%s: the socket is served by uid %d, not by you (uid %d): not sending the token to it", path, cred.Uid, os.Getuid())
	}
	return nil
}
