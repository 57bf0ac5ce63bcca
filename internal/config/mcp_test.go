package config

import (
	"strings"
	"testing"
)

func TestMCPListenIsLoopbackOnlyAndThePathAbsolute(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	c, err := Parse("c.yaml", []byte("mcpServers: {}\n"), env)
	if err != nil {
		t.Fatal(err)
	}
	if c.MCPListen != "" || c.MCPPath != DefaultMCPPath {
		t.Errorf("defaults: mcp_listen %q, mcp_path %q; want none and %q", c.MCPListen, c.MCPPath, DefaultMCPPath)
	}
	for _, ok := range []string{"127.0.0.1:7879", "[::1]:0", "localhost:7879", "127.3.2.1:80"} {
		c, err := Parse("c.yaml", []byte("mcp_listen: \""+ok+"\"\nmcp_path: /x/mcp\n"), env)
		if err != nil || c.MCPListen != ok || c.MCPPath != "/x/mcp" {
			t.Errorf("mcp_listen %q: %+v, %v", ok, c, err)
		}
	}
	for body, want := range map[string]string{
		"mcp_listen: 0.0.0.0:7879":    "not a loopback address",
		"mcp_listen: \":7879\"":       "not a loopback address",
		"mcp_listen: 192.168.1.2:80":  "not a loopback address",
		"mcp_listen: example.com:80":  "not a loopback address",
		"mcp_listen: 127.0.0.1":       "not host:port",
		"mcp_path: mcp":               `field mcp_path: "mcp" does not start with /`,
		"mcp_listn: 127.0.0.1:7879\n": `did you mean "mcp_listen"`,
	} {
		_, err := Parse("c.yaml", []byte(body), env)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want one containing %q", body, err, want)
		}
	}
}
