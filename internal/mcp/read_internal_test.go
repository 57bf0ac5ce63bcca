package mcp

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"weak"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk stores every resources/read result in its own cache until
// the URI is read again; ReadHint gives it an empty one to store, so the
// result (its contents and _meta maps) is garbage once ReadHint returns.
func TestReadResultsAreNotKeptByTheSDK(t *testing.T) {
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "s", Version: "0"}, nil)
	for i := range 3 {
		uri := fmt.Sprintf("doc://%d", i)
		srv.AddResource(&mcpsdk.Resource{URI: uri, Name: uri}, func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Meta: mcpsdk.Meta{"big": map[string]any{"k": "v"}},
				Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, Text: "text of " + req.Params.URI}}}, nil
		})
	}
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	sess, err := ConnectTransport(t.Context(), "s", ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if _, _, proto := sess.ServerInfo(); proto < "2026-07-28" {
		t.Fatalf("negotiated %s; the SDK caches reads from 2026-07-28 on", proto)
	}
	var kept []weak.Pointer[mcpsdk.ReadResourceResult]
	for i := range 3 {
		uri := fmt.Sprintf("doc://%d", i)
		got, _, err := sess.ReadHint(t.Context(), uri)
		if err != nil || len(got) != 1 || got[0].Text != "text of "+uri {
			t.Fatalf("ReadHint(%s) = %+v, %v", uri, got, err)
		}
		// What the middleware received, read the same way ReadHint does.
		var slot readSlot
		if _, err := sess.cs.ReadResource(context.WithValue(t.Context(), hintKey{}, &slot), &mcpsdk.ReadResourceParams{URI: uri}); err != nil || slot.res == nil {
			t.Fatalf("ReadResource(%s): %v, result %v", uri, err, slot.res)
		}
		kept = append(kept, weak.Make(slot.res))
	}
	runtime.GC()
	runtime.GC()
	for i, w := range kept {
		if w.Value() != nil {
			t.Errorf("read result %d still reachable after the read (the SDK's cache keeps it)", i)
		}
	}
}

// The go-sdk stores a read under its URI until that URI is read again, so
// a session that reads many URIs once each (a server listing new ones at
// each re-list, read by the content pass) kept every URI. ReadHint makes it
// store them under "".
func TestReadURIsAreNotKeptByTheSDK(t *testing.T) {
	const reads, size = 2000, 8 << 10
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "s", Version: "0"}, &mcpsdk.ServerOptions{
		Capabilities: &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{}}})
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if r, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: r.Params.URI, Text: "t"}}}, nil
			}
			return next(ctx, method, req)
		}
	})
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	sess, err := ConnectTransport(t.Context(), "s", ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	heap := func() int64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return int64(ms.HeapAlloc)
	}
	long := strings.Repeat("u", size)
	before := heap()
	for i := range reads {
		if _, _, err := sess.ReadHint(t.Context(), fmt.Sprintf("doc://%d/%s", i, long)); err != nil {
			t.Fatal(err)
		}
	}
	if grew := heap() - before; grew > reads*size/2 {
		t.Errorf("heap grew by %d MiB after %d reads of %d KiB URIs; want the URIs not kept", grew>>20, reads, size>>10)
	}
}
