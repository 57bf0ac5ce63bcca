package mcpserver_test

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// liveHeap returns the bytes of live heap objects after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A session's recent tasks (offered as completions) are kept after the
// request: a task of a few bytes sent inside 62 KiB of spaces (a task may
// hold 64 KiB) must keep those few bytes, not the string it was cut from.
// 64 sessions × 20 tasks of such requests (1 MiB each, before tasks were
// bounded) held 1.3 GB of a daemon's heap.
func TestRecentTasksKeepOnlyTheirOwnBytes(t *testing.T) {
	docs := map[string]string{"doc://a": "# Alpha\n\nalpha beta\n"}
	f := newFacade(t, map[string]*mcpsdk.Server{"good": mcptest.NewServer(docs, nil)}, nil, engine.Options{})
	sessions := []*mcpsdk.ClientSession{f.connect(t, nil), f.connect(t, nil)}
	pad := strings.Repeat(" ", 31<<10)
	before := liveHeap()
	const perSession = 20 // what a session keeps
	for i, cs := range sessions {
		for j := range perSession {
			task := fmt.Sprintf("%stask %d %d%s", pad, i, j, pad)
			args := map[string]any{"query": task}
			name := "search_resources"
			if j%2 == 1 {
				args, name = map[string]any{"task": task, "budget": 10}, "assemble_context"
			}
			res, err := cs.CallTool(t.Context(), &mcpsdk.CallToolParams{Name: name, Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %+v", name, err, res)
			}
		}
	}
	grown := int64(liveHeap()) - int64(before)
	// 40 tasks cut from 62 KiB strings would hold 2.5 MiB.
	if grown > 1<<20 {
		t.Errorf("the live heap grew %d KiB after %d tasks of a few bytes each sent inside 62 KiB of spaces, want them kept alone", grown>>10, len(sessions)*perSession)
	}
	res, err := sessions[0].Complete(t.Context(), &mcpsdk.CompleteParams{Ref: &mcpsdk.CompleteReference{Type: "ref/prompt", Name: "context"}, Argument: mcpsdk.CompleteParamsArgument{Name: "task", Value: "task 0 1"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"task 0 19", "task 0 18", "task 0 17", "task 0 16", "task 0 15", "task 0 14", "task 0 13", "task 0 12", "task 0 11", "task 0 10", "task 0 1"}; !slices.Equal(res.Completion.Values, want) {
		t.Errorf("completions of %q = %q, want the trimmed tasks, most recent first: %q", "task 0 1", res.Completion.Values, want)
	}
	runtime.KeepAlive(sessions)
}
