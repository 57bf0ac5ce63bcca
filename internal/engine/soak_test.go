package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

// The test binary doubles as a misbehaving stdio MCP server when
// CONTEXTD_SOAK_FAKE is set: "crashy" exits 20 s after it starts, "storm"
// sends notifications/resources/list_changed every 5 ms.
func TestMain(m *testing.M) {
	switch os.Getenv("CONTEXTD_SOAK_FAKE") {
	case "crashy":
		time.AfterFunc(20*time.Second, func() { fmt.Fprintln(os.Stderr, "crashy: exiting on schedule"); os.Exit(2) })
		srv := mcptest.NewServer(map[string]string{"doc://crashy/notes": "notes from a server that crashes"}, nil)
		_ = srv.Run(context.Background(), &mcpsdk.StdioTransport{})
		os.Exit(0)
	case "storm":
		rawStormServer()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// rawStormServer speaks newline-delimited JSON-RPC on stdio by hand and sends
// notifications/resources/list_changed every 2 ms (500 a second), which a
// go-sdk server cannot be made to do: it debounces its own notifications.
func rawStormServer() {
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		defer mu.Unlock()
		out.Write(append(b, '\n'))
		out.Flush()
	}
	go func() {
		for {
			time.Sleep(2 * time.Millisecond)
			send(map[string]any{"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
		}
	}()
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		var result any
		switch req.Method {
		case "initialize":
			result = map[string]any{"protocolVersion": "2025-06-18", "serverInfo": map[string]string{"name": "storm", "version": "0"},
				"capabilities": map[string]any{"resources": map[string]bool{"listChanged": true}}}
		case "resources/list":
			result = map[string]any{"resources": []map[string]string{{"uri": "doc://storm/base", "name": "base"}}}
		case "resources/templates/list":
			result = map[string]any{"resourceTemplates": []any{}}
		case "resources/read":
			result = map[string]any{"contents": []map[string]string{{"uri": "doc://storm/base", "text": "storm"}}}
		case "ping":
			result = map[string]any{}
		default:
			send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
			continue
		}
		send(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": result})
	}
}

// BenchmarkSoak runs the engine against server-everything (healthy), a fake
// that crashes every 20 s and a fake that storms list_changed, issuing
// Assemble requests throughout, for $CONTEXTD_SOAK (e.g. 5m). It reports
// failed Assembles and goroutine and heap growth; it fails if an answer
// lacks server-everything's architecture.md, if goroutines grow by more than
// 20, or if the live heap grows by more than 32 MiB.
//
//	CONTEXTD_SOAK=5m go test -run XXX -bench BenchmarkSoak -benchtime 1x ./internal/engine/
func BenchmarkSoak(b *testing.B) {
	d, err := time.ParseDuration(os.Getenv("CONTEXTD_SOAK"))
	if err != nil {
		b.Skip("set CONTEXTD_SOAK to a duration (e.g. 5m) to run the soak")
	}
	everything := mcptest.NodePeer(b, "server-everything")
	cfg := &config.Config{DataDir: b.TempDir(), Servers: []config.Server{
		{Name: "crashy", Transport: config.TransportStdio, Command: os.Args[0], Env: map[string]string{"CONTEXTD_SOAK_FAKE": "crashy"}},
		{Name: "everything", Transport: config.TransportStdio, Command: "node", Args: []string{everything, "stdio"}},
		{Name: "storm", Transport: config.TransportStdio, Command: os.Args[0], Env: map[string]string{"CONTEXTD_SOAK_FAKE": "storm"}},
	}}
	for b.Loop() {
		eng, err := engine.New(b.Context(), engine.Options{Config: cfg})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = eng.Run(ctx) })
		if err := eng.WaitReady(b.Context()); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Second) // warm up: every server connected and synced once
		g0, h0 := runtime.NumGoroutine(), liveHeap()

		var ok, failed, requests int
		var firstFailure string
		var maxLatency time.Duration
		stop := time.Now().Add(d)
		for time.Now().Before(stop) {
			t0 := time.Now()
			res, err := eng.Assemble(b.Context(), engine.AssembleRequest{Query: "how is the everything server's architecture organised", TokenBudget: 1500})
			maxLatency = max(maxLatency, time.Since(t0))
			requests++
			found := false
			if err == nil {
				for _, it := range res.Items {
					found = found || (it.Server == "everything" && strings.HasSuffix(it.URI, "/architecture.md"))
				}
			}
			if found {
				ok++
			} else {
				failed++
				if firstFailure == "" {
					firstFailure = fmt.Sprintf("err=%v", err)
					if res != nil {
						firstFailure += fmt.Sprintf(" items=%+v omitted=%+v", res.Items, res.Omitted)
					}
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
		g1, h1 := runtime.NumGoroutine(), liveHeap()
		var states []string
		for _, s := range eng.Servers() {
			states = append(states, fmt.Sprintf("%s=%s(syncs %d)", s.Server, s.State, s.Syncs))
		}
		cancel()
		wg.Wait()
		eng.Close()

		b.ReportMetric(float64(requests), "assembles")
		b.ReportMetric(float64(failed), "failed")
		b.ReportMetric(float64(g1-g0), "goroutine-growth")
		b.ReportMetric(float64(h1-h0)/(1<<20), "heap-growth-MiB")
		b.ReportMetric(float64(maxLatency.Milliseconds()), "max-ms")
		b.Logf("%d assembles (%d ok, %d failed); goroutines %d → %d; live heap %.1f → %.1f MiB; max latency %v; %s",
			requests, ok, failed, g0, g1, float64(h0)/(1<<20), float64(h1)/(1<<20), maxLatency, strings.Join(states, " "))
		if failed > 0 {
			b.Errorf("%d assembles failed for the healthy server; first: %s", failed, firstFailure)
		}
		if g1-g0 > 20 {
			b.Errorf("goroutines grew from %d to %d", g0, g1)
		}
		if h1-h0 > 32<<20 {
			b.Errorf("live heap grew by %.1f MiB", float64(h1-h0)/(1<<20))
		}
	}
}

func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
