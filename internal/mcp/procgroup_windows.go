//go:build windows

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup does nothing on Windows: a server is stopped alone.
func ownGroup(*exec.Cmd) {}

// signalGroup kills the server on SIGKILL and signals it otherwise (which
// Windows supports for no signal but os.Kill).
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if sig == syscall.SIGKILL {
		return cmd.Process.Kill()
	}
	return cmd.Process.Signal(sig)
}
