package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that imports the client links gRPC and the config reader, not
// the daemon: no index, embedder, engine or MCP client.
func TestClientDoesNotLinkTheDaemon(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, bad := range []string{"github.com/contextd/contextd/internal/engine", "github.com/contextd/contextd/internal/index",
			"github.com/contextd/contextd/internal/embed", "github.com/contextd/contextd/internal/mcp", "github.com/philippgille/chromem-go",
			"github.com/modelcontextprotocol/go-sdk"} {
			if pkg == bad || strings.HasPrefix(pkg, bad+"/") {
				t.Errorf("the client links %s", pkg)
			}
		}
	}
}
