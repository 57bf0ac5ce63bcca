package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// query and servers find the daemon through the config's listen, over TCP
// and a unix socket, not the default address. The file's server needs a
// variable that only the daemon's environment sets: the clients, which
// need listen and auth alone, work without it.
func TestClientsFindTheDaemonThroughTheConfigsListen(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpAddr := l.Addr().String()
	l.Close()
	sock := filepath.Join(t.TempDir(), "d.sock")
	for _, listen := range []string{tcpAddr, "unix://" + sock} {
		t.Run(strings.SplitN(listen, ":", 2)[0], func(t *testing.T) {
			t.Setenv("CTX_TEST_TOKEN", "0123456789abcdef0123456789abcdef")
			t.Setenv("CTX_TEST_DAEMON_ONLY", "secret-for-the-upstream")
			cfg := writeConfig(t, fmt.Sprintf(`
listen: %s
data_dir: %s
auth: { token: "${CTX_TEST_TOKEN}" }
mcpServers:
  remote:
    url: http://127.0.0.1:1/mcp
    headers: { Authorization: "Bearer ${CTX_TEST_DAEMON_ONLY}" }
`, listen, t.TempDir()))
			t.Chdir(t.TempDir()) // no ./contextd.yaml to find instead
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			var buf bytes.Buffer
			logs := &syncWriter{w: &buf}
			go func() { done <- run(ctx, []string{"serve", "--config", cfg}, logs, logs) }()
			defer func() { cancel(); <-done }()

			servers := func() (string, error) {
				var out, errb bytes.Buffer
				err := run(t.Context(), []string{"servers", "--config", cfg}, &out, &errb)
				return out.String(), err
			}
			deadline := time.Now().Add(30 * time.Second)
			for _, err := servers(); err != nil; _, err = servers() {
				if time.Now().After(deadline) {
					t.Fatalf("servers --config: %v\nlogs:\n%s", err, buf.String())
				}
				time.Sleep(100 * time.Millisecond)
			}
			os.Unsetenv("CTX_TEST_DAEMON_ONLY") // the client's environment lacks it
			out, err := servers()
			if err != nil || !strings.HasPrefix(out, "remote ") {
				t.Errorf("servers --config without the server's variable: %v\n%s", err, out)
			}
			var qout, qerr bytes.Buffer
			err = run(t.Context(), []string{"query", "--config", cfg, "--budget", "100", "anything"}, &qout, &qerr)
			if err == nil || !strings.Contains(err.Error(), "daemon at "+listen) {
				t.Errorf("query --config: %v, want the daemon's own answer (its server is not synced)", err)
			}
		})
	}
}
