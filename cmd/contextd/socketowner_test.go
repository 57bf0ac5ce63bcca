package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Over a unix socket someone else created (another user squatting the
// path in a shared directory while no daemon runs), the CLI does not
// connect, so the token never reaches them.
func TestCLIDoesNotSendTheTokenToAnotherUsersSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "contextd.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Chown(sock, 4242, 4242); err != nil {
		t.Skipf("cannot give the socket to another user here: %v", err)
	}
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	cfg := writeConfig(t, fmt.Sprintf("listen: unix://%s\nauth: {token: squatted-token-0123456789}\nmcpServers: {}\n", sock))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	err = run(ctx, []string{"servers", "--config", cfg}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "not sending the token") {
		t.Errorf("servers over another user's socket: %v, want a refusal", err)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the CLI connected %d times to another user's socket", n)
	}
}
