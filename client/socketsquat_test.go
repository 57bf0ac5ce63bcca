//go:build unix

package client_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/client"
)

// A client dialled before its daemon's socket exists (a host started first,
// or a daemon restarted) does not send the token to a socket another user
// made at that path meanwhile: Dial's own check found nothing to check, so
// every connection is checked. The squatter here is a daemon that accepts
// the token: a call that succeeds has handed it over. Needs root to give
// the socket away.
func TestTokenIsNotSentToASocketAnotherUserMadeAfterDial(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "contextd.sock")
	c, err := client.Dial("unix://"+sock, &client.Options{Token: testToken})
	if err != nil {
		t.Fatalf("Dial before the socket exists: %v", err)
	}
	defer c.Close()

	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sock, 4242, 4242); err != nil {
		l.Close()
		t.Skipf("cannot give the socket to another user here: %v", err)
	}
	stop, err := startDaemon(l, testToken, docs)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err = c.ListServers(ctx)
	if err == nil {
		t.Fatal("ListServers over another user's socket succeeded: the token went to it")
	}
	if !strings.Contains(err.Error(), "not sending the token") {
		t.Errorf("err = %v, want it to say the token was not sent", err)
	}
}
