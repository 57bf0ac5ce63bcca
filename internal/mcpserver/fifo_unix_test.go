//go:build unix

package mcpserver_test

import (
	"context"
	"fmt"
	"os"
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

// A FIFO put in the place of the record of what was served while the
// server runs costs a read's append, not its answer: the append opened
// it and waited for a reader, and every read after with it, for good.
func TestAFIFOPutInPlaceOfTheRecordDoesNotBlockReads(t *testing.T) {
	dir := t.TempDir()
	a := mcptest.NewServer(nil, nil)
	for i := range 3 {
		addText(a, fmt.Sprintf("doc://a/%d", i), fmt.Sprintf("page %d on walrus migration, the tusk census and the ice shelf survey %d", i, i))
	}
	opts := &mcpserver.Options{StateFile: mcpserver.StateFileIn(dir)}
	f := newFacade(t, map[string]*mcpsdk.Server{"a": a}, opts, engine.Options{})
	host := f.connect(t, nil)
	record := filepath.Join(dir, "mcp-served-reads")
	read := func(i int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		if _, err := host.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: fmt.Sprintf("contextd:resource/a/doc://a/%d", i)}); err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
	}
	read(0)
	deadline := time.Now().Add(10 * time.Second)
	for { // Run's first whole write, then the read's append
		if fi, err := os.Stat(record); err == nil && fi.Size() > 16 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.Remove(record); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(record, 0o600); err != nil {
		t.Fatal(err)
	}
	read(1)
	read(2)
}

// The record of what was served is written 0600 whatever mode the file
// it replaces had (one restored from a backup 0644 kept that mode).
func TestTheRecordIsWrittenPrivateWhateverItsModeWas(t *testing.T) {
	dir := t.TempDir()
	record := filepath.Join(dir, "mcp-served-reads")
	if err := os.WriteFile(record, []byte("contextd-served\x02"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(record, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	a := mcptest.NewServer(nil, nil)
	addText(a, "doc://a/1", "a page on walrus migration")
	opts := &mcpserver.Options{StateFile: mcpserver.StateFileIn(dir)}
	f := newFacade(t, map[string]*mcpsdk.Server{"a": a}, opts, engine.Options{})
	f.connect(t, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		fi, err := os.Stat(record)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() == 0o600 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the record is %v 10 s after the start; want 0600", fi.Mode().Perm())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
