//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, so that stopping the
// server reaches what it started: npx's node child, a shell's pipeline, a
// helper the server forked. Without it those outlived contextd's stop.
// The group is not the terminal's foreground one: a terminal's Ctrl-C
// reaches contextd alone, which stops its servers in order, and a server
// that reads the terminal itself (/dev/tty) is stopped by SIGTTIN.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// signalGroup sends sig to the process group cmd leads (see ownGroup).
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	return syscall.Kill(-cmd.Process.Pid, sig)
}
