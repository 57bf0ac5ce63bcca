package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// A port another process holds: the error says which flag and config key
// choose another address, for the gRPC listener and the MCP one.
func TestServeOnAPortInUseNamesTheFlagAndKey(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	for _, tc := range []struct {
		name, extra string
		want        []string
	}{
		{"grpc", "listen: " + addr, []string{"listen " + addr, "already in use", "--listen", "the config's listen"}},
		{"mcp", "listen: 127.0.0.1:0\nmcp_listen: " + addr, []string{"listen " + addr, "already in use", "--mcp-listen", "mcp_listen"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeConfig(t, fmt.Sprintf("%s\ndata_dir: %s\nmcpServers: {}\n", tc.extra, t.TempDir()))
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second) // a serve that starts stops here
			defer cancel()
			out := &syncWriter{w: &bytes.Buffer{}}
			err := run(ctx, []string{"serve", "--config", cfg}, out, out)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("serve on a held port: %v, want it to mention %q", err, w)
				}
			}
		})
	}
}
