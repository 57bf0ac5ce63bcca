package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// rawMirror runs a mirror of a hand-written server whose read results are
// read, with cacheBytes (0: the default).
func rawMirror(t *testing.T, read string, cacheBytes int64) (*ctxsync.Mirror, *mcptest.RawServer) {
	srv := &mcptest.RawServer{Results: map[string]string{
		"resources/list": `{"resources":[{"uri":"x://a","name":"a"}]}`,
		"resources/read": read,
	}}
	m := ctxsync.New(ctxsync.Options{Server: "s", Index: newIndex(t), Dial: func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
		return mcp.ConnectTransport(ctx, "s", srv.Transport(t), o)
	}, MinBackoff: time.Hour, MaxBackoff: time.Hour, CacheBytes: cacheBytes, ContentMaxResources: noContentIndex})
	start(t, m)
	<-m.Ready()
	return m, srv
}

// A malformed or contradictory ttlMs or cacheScope costs the caching, not
// the read: the result is read each time and never cached.
func TestMalformedCacheHintsAreReadNotCached(t *testing.T) {
	for _, h := range []string{
		`,"ttlMs":1.5,"cacheScope":"public"`,
		`,"ttlMs":"60000","cacheScope":"public"`,
		`,"ttlMs":true,"cacheScope":"public"`,
		`,"ttlMs":1e308,"cacheScope":"public"`,
		`,"ttlMs":60000,"cacheScope":5`,
		`,"ttlMs":60000,"cacheScope":["public"]`,
		`,"ttlMs":60000,"cacheScope":"private","cacheScope":"public"`,
		`,"ttlMs":1,"ttlMs":60000,"cacheScope":"public"`,
	} {
		t.Run(h, func(t *testing.T) {
			m, srv := rawMirror(t, `{"contents":[{"uri":"x://a","mimeType":"text/plain","text":"hello"}]`+h+`}`, 0)
			for i := range 2 {
				c, f, err := m.ReadFetch(t.Context(), "x://a")
				if err != nil || len(c) != 1 || c[0].Text != "hello" {
					t.Fatalf("read %d: %v, %v", i, c, err)
				}
				if f.Freshness() != "read" {
					t.Errorf("read %d: %s, want read (not cached)", i, f.Freshness())
				}
			}
			if n := srv.Count("resources/read"); n != 2 {
				t.Errorf("%d server reads, want 2", n)
			}
		})
	}
}

// Content URIs, MIME types and the items themselves count against
// Options.CacheBytes: a public TTL result of 20 empty items with 100-byte
// URIs is too big for a 1 KB cache.
func TestCacheBytesCountsItemsAndURIs(t *testing.T) {
	var items []string
	for i := range 20 {
		items = append(items, fmt.Sprintf(`{"uri":"x://%s%03d","mimeType":"text/plain","text":""}`, strings.Repeat("u", 93), i))
	}
	m, srv := rawMirror(t, `{"contents":[`+strings.Join(items, ",")+`],"ttlMs":60000,"cacheScope":"public"}`, 1024)
	for i := range 2 {
		c, f, err := m.ReadFetch(t.Context(), "x://a")
		if err != nil || len(c) != 20 {
			t.Fatalf("read %d: %d items, %v", i, len(c), err)
		}
		if f.Freshness() != "read" {
			t.Errorf("read %d: %s; a result of 20 items with 100-byte URIs was cached under a 1 KB bound", i, f.Freshness())
		}
	}
	if n := srv.Count("resources/read"); n != 2 {
		t.Errorf("%d server reads, want 2", n)
	}
}
