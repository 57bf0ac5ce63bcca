package client_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/contextd/contextd/client"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

const testToken = "0123456789abcdef0123456789abcdef"

var docs = map[string]string{"doc://architecture": "# Architecture\n\nOne index for every server.\n"}

func daemon(t *testing.T, network, addr, token string) {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := startDaemon(l, token, docs)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "contextd.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A program finds the daemon the way the CLI does: through the config's
// listen, over TCP or a unix socket, with its token; and a server entry
// whose ${VAR} is unset, which only the daemon needs, does not stop it.
func TestReadConfigFindsTheDaemonOverTCPAndUnix(t *testing.T) {
	t.Setenv("CONTEXTD_TEST_UNSET_SERVER_TOKEN", "")
	os.Unsetenv("CONTEXTD_TEST_UNSET_SERVER_TOKEN")
	t.Setenv("CONTEXTD_TEST_TOKEN", testToken)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tcpAddr := l.Addr().String()
	l.Close()
	sock := filepath.Join(t.TempDir(), "c.sock")
	for _, tt := range []struct{ network, listen, addr string }{
		{"tcp", tcpAddr, tcpAddr},
		{"unix", "unix://" + sock, sock},
	} {
		t.Run(tt.network, func(t *testing.T) {
			daemon(t, tt.network, tt.addr, testToken)
			path := writeFile(t, fmt.Sprintf(`
listen: %s
auth: { token: "${CONTEXTD_TEST_TOKEN}" }
mcpServers:
  docs:
    url: https://docs.example.internal/mcp
    headers: { Authorization: "Bearer ${CONTEXTD_TEST_UNSET_SERVER_TOKEN}" }
`, tt.listen))
			target, err := client.ReadConfig(path)
			if err != nil {
				t.Fatalf("ReadConfig: %v", err)
			}
			if target.Addr != tt.listen || target.Options.Token != testToken || target.Path != path {
				t.Errorf("target %+v", target)
			}
			c, err := client.Dial(target.Addr, &target.Options)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			resp, err := c.Search(t.Context(), &contextdv1.SearchRequest{Query: "architecture", Limit: 5})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if got := resp.GetResults(); len(got) != 1 || got[0].GetUri() != "doc://architecture" {
				t.Errorf("results %v", got)
			}
		})
	}
}

// Errors say who answered: the daemon's own refusal keeps its code and is
// not mistaken for no daemon; a closed port is ErrNoDaemon.
func TestErrorsTellTheDaemonsAnswerFromNoDaemon(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	stop, err := startDaemon(l, testToken, docs)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	c, err := client.Dial(addr, &client.Options{Token: "0123456789abcdef-wrong"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.ListServers(t.Context())
	var ce *client.Error
	if !errors.As(err, &ce) || status.Code(err) != codes.Unauthenticated || errors.Is(err, client.ErrNoDaemon) {
		t.Errorf("wrong token: %v (code %v)", err, status.Code(err))
	}
	if !strings.HasPrefix(err.Error(), "daemon at "+addr+": Unauthenticated") {
		t.Errorf("wrong token's message: %q", err)
	}
	_, err = c.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "x", TokenBudget: 100})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("Assemble with a wrong token: %v", err)
	}

	ok, err := client.Dial(addr, &client.Options{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if _, err := ok.Assemble(t.Context(), &contextdv1.AssembleRequest{Query: "architecture"}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("a zero budget: %v, want InvalidArgument", err)
	}

	stop()
	none, err := client.Dial(addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	_, err = none.ListServers(t.Context())
	if !errors.Is(err, client.ErrNoDaemon) || !strings.Contains(err.Error(), "no daemon answering at "+addr) {
		t.Errorf("no daemon: %v", err)
	}
}

func TestDialRejectsAddressesItCannotUse(t *testing.T) {
	for _, addr := range []string{"", "unix://", "http://127.0.0.1:7878"} {
		if _, err := client.Dial(addr, nil); err == nil {
			t.Errorf("Dial(%q) succeeded", addr)
		}
	}
}

// With no file, ReadConfig gives the default address and no credentials.
func TestReadConfigWithoutAFile(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("CONTEXTD_CONFIG", "")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	target, err := client.ReadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if target.Addr != client.DefaultAddr || target.Options.Token != "" || target.Options.TLS != nil || target.Path != "" {
		t.Errorf("target %+v", target)
	}
}
