// Package mcptest builds real go-sdk MCP servers for contextd's tests and
// connects contextd sessions to them over in-memory transports.
package mcptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/mcp"
)

// NewServer returns a go-sdk server that declares the resources capability
// (with subscribe and listChanged) and serves docs: a map of URI → text,
// each a text/markdown resource named after its URI.
func NewServer(docs map[string]string, opts *mcpsdk.ServerOptions) *mcpsdk.Server {
	o := &mcpsdk.ServerOptions{}
	if opts != nil {
		*o = *opts
	}
	if o.Capabilities == nil {
		o.Capabilities = &mcpsdk.ServerCapabilities{Resources: &mcpsdk.ResourceCapabilities{ListChanged: true}}
	}
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "mcptest", Version: "v0"}, o)
	uris := make([]string, 0, len(docs))
	for u := range docs {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	for _, u := range uris {
		AddText(s, u, u, docs[u])
	}
	return s
}

// AddText adds (or replaces) a text/markdown resource on s.
func AddText(s *mcpsdk.Server, uri, name, text string) {
	s.AddResource(&mcpsdk.Resource{URI: uri, Name: name, MIMEType: "text/markdown", Size: int64(len(text))},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: text}}}, nil
		})
}

// Dial returns a function that connects a new contextd session to a new
// session of s over in-memory transports. Every session opened is closed
// when the test ends.
func Dial(t testing.TB, name string, s *mcpsdk.Server) func(context.Context, *mcp.Options) (*mcp.Session, error) {
	return func(ctx context.Context, opts *mcp.Options) (*mcp.Session, error) {
		ct, st := mcpsdk.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			return nil, fmt.Errorf("mcptest: server connect: %w", err)
		}
		t.Cleanup(func() { _ = ss.Close() })
		sess, err := mcp.ConnectTransport(ctx, name, ct, opts)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = sess.Close() })
		return sess, nil
	}
}

// Connect connects one session to s and fails the test on error.
func Connect(t testing.TB, name string, s *mcpsdk.Server, opts *mcp.Options) *mcp.Session {
	t.Helper()
	sess, err := Dial(t, name, s)(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// A Recorder records the JSON-RPC methods a server receives.
type Recorder struct {
	mu      sync.Mutex
	methods []string
}

// Middleware returns a receiving middleware for mcpsdk.Server.AddReceivingMiddleware.
func (r *Recorder) Middleware() mcpsdk.Middleware {
	return func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			r.mu.Lock()
			r.methods = append(r.methods, method)
			r.mu.Unlock()
			return next(ctx, method, req)
		}
	}
}

// Count returns how many requests for method were received so far.
func (r *Recorder) Count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.methods {
		if m == method {
			n++
		}
	}
	return n
}

// Methods returns the methods received so far, in order.
func (r *Recorder) Methods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.methods)
}

// NodePeer returns the entry point of an npm MCP server installed in the
// repository's node_modules (by npm ci), failing the test with a pointer to
// npm ci when it is missing.
func NodePeer(t testing.TB, pkg string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (%v): run `npm ci` in the repository root first", pkg, err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: these tests need Node.js 20+")
	}
	return p
}
