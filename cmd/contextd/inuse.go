package main

import (
	"fmt"
	"net"
)

// listenTCP listens on addr; when another process holds the port, the
// error says so and names the flag and config key (what) that choose
// another address.
func listenTCP(addr, what string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil && addrInUse(err) {
		return nil, fmt.Errorf("listen %s: the address is already in use (another contextd, or another program): stop it, or choose another address with %s", addr, what)
	}
	return l, err
}

// The flags and config keys that choose the daemon's addresses.
const (
	listenWhat    = "--listen or the config's listen"
	mcpListenWhat = "--mcp-listen or the config's mcp_listen"
)
