package service_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/service"
)

// A request without the token gets 401 and its connection closed, even
// one that declares a body it never sends, on a server with no timeouts
// at all: a client without the token cannot hold connections open. A
// request with the token keeps its connection for the next.
func TestRequireBearerClosesRefusedConnections(t *testing.T) {
	const token = "bearer-close-token-0123456789"
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: service.RequireBearer(token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))}
	go srv.Serve(l)
	defer srv.Close()

	for _, tc := range []struct {
		name, req  string
		status     int
		wantClosed bool
	}{
		{"no token, no body", "GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n", http.StatusUnauthorized, true},
		{"wrong token, body never sent", "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\nContent-Length: 100\r\n\r\n", http.StatusUnauthorized, true},
		{"no token, body sent", "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", http.StatusUnauthorized, true},
		{"token", "GET /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n\r\n", http.StatusOK, false},
		{"token, scheme in lower case", "GET /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: bearer " + token + "\r\n\r\n", http.StatusOK, false},
		{"token, no scheme", "GET /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: " + token + "\r\n\r\n", http.StatusUnauthorized, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", l.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			io.WriteString(c, tc.req)
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			// A refused connection is closed at once; half a second is
			// long enough to tell.
			c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			_, err = br.ReadByte()
			closed := err == io.EOF || (err != nil && strings.Contains(err.Error(), "connection reset"))
			if closed != tc.wantClosed {
				t.Errorf("after the response, read: %v; want the connection closed: %v", err, tc.wantClosed)
			}
		})
	}
}
