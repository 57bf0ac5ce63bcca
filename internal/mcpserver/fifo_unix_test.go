//go:build unix

package mcpserver_test

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/mcpserver"
)

// A FIFO in the place of a state file (or a link to one) is logged and
// ignored: opened to be read, it blocked the start for good.
func TestAFIFOInPlaceOfAStateFileDoesNotBlockTheStart(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"mcp-list-paces.json", "mcp-served-reads"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := mcptest.NewServer(nil, nil)
	addText(a, "doc://a/1", "a page on walrus migration")
	started := make(chan struct{})
	go func() {
		defer close(started)
		opts := &mcpserver.Options{StateFile: mcpserver.StateFileIn(dir)}
		f := newFacade(t, map[string]*mcpsdk.Server{"a": a}, opts, engine.Options{})
		f.connect(t, nil)
	}()
	select {
	case <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the MCP server did not start in 30 s with FIFOs in place of its state files")
	}
}
