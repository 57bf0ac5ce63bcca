package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
)

// naiveFileServer lists one document but, like a naive file server, reads
// whatever path it is asked for: its dotfiles and paths outside its root
// included. reads records every URI it was asked to read.
type naiveFileServer struct {
	srv   *mcpsdk.Server
	mu    gosync.Mutex
	reads []string
}

func newNaiveFileServer(template string) *naiveFileServer {
	n := &naiveFileServer{srv: mcptest.NewServer(map[string]string{"file:///srv/docs/readme.md": "the readme"}, nil)}
	if template != "" {
		n.srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: template, Name: "docs"}, nil)
	}
	n.srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if r, ok := req.(*mcpsdk.ReadResourceRequest); ok {
				n.mu.Lock()
				n.reads = append(n.reads, r.Params.URI)
				n.mu.Unlock()
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: r.Params.URI, Text: "contents of " + r.Params.URI}}}, nil
			}
			return next(ctx, method, req)
		}
	})
	return n
}

func (n *naiveFileServer) read(uri string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, u := range n.reads {
		if u == uri {
			return true
		}
	}
	return false
}

func fileEngine(t *testing.T, n *naiveFileServer, allowUnlisted bool, lim config.Limits) *engine.Engine {
	t.Helper()
	cfg := &config.Config{Limits: lim, Servers: []config.Server{{Name: "fs", Transport: config.TransportStdio, Command: "unused", AllowUnlistedPins: allowUnlisted}}}
	return newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": n.srv}, engine.Options{Config: cfg})
}

func pin(uris ...string) []resource.Key {
	var out []resource.Key
	for _, u := range uris {
		out = append(out, resource.Key{Server: "fs", URI: u})
	}
	return out
}

func TestPinsMustBeListedOrOfferedByATemplate(t *testing.T) {
	n := newNaiveFileServer("file:///srv/docs/{+path}")
	eng := fileEngine(t, n, false, config.Limits{})
	for _, uri := range []string{"file:///srv/.hidden_secret", "file:///srv/docs/../../etc/passwd", "file:///srv/docs/%2e%2e/x", "file:///etc/shadow"} {
		_, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "readme", TokenBudget: 100, Pinned: pin(uri)})
		if !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "allow_unlisted_pins") {
			t.Errorf("pin %s: err = %v, want ErrInvalidArgument naming allow_unlisted_pins", uri, err)
		}
		if n.read(uri) {
			t.Errorf("pin %s was read from the server", uri)
		}
	}
	// Listed, and offered by the template: read.
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "readme", TokenBudget: 100,
		Pinned: pin("file:///srv/docs/readme.md", "file:///srv/docs/guide/intro.md")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) < 2 || res.Items[1].URI != "file:///srv/docs/guide/intro.md" {
		t.Errorf("items %+v, want both pins", res.Items)
	}
}

// A pin or read whose URI holds a credential (the daemon's token, another
// server's, a bearer value) is not sent, whatever the pin policy, and the
// error does not quote it.
func TestPinsHoldingACredentialAreNotSent(t *testing.T) {
	const daemonToken = "dtok-9Qz81LmXw02VbNc7"
	for _, allow := range []bool{false, true} {
		n := newNaiveFileServer("file:///srv/docs/{+path}")
		cfg := &config.Config{Auth: config.Auth{Token: daemonToken}, Servers: []config.Server{{Name: "fs", Transport: config.TransportStdio, Command: "unused", AllowUnlistedPins: allow}}}
		eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": n.srv}, engine.Options{Config: cfg})
		for _, uri := range []string{"file:///srv/docs/" + daemonToken, "file:///srv/docs/token=abc123/x", "file:///srv/docs/Bearer%20abcdef0123456789"} {
			_, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "readme", TokenBudget: 100, Pinned: pin(uri)})
			if !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "holds a credential") || strings.Contains(err.Error(), "9Qz81") {
				t.Errorf("allow_unlisted_pins %v, pin %s: err = %v, want ErrInvalidArgument saying it holds a credential", allow, uri, err)
			}
			if _, _, err := eng.Read(t.Context(), resource.Key{Server: "fs", URI: uri}); !errors.Is(err, engine.ErrInvalidArgument) {
				t.Errorf("allow_unlisted_pins %v, read %s: err = %v, want ErrInvalidArgument", allow, uri, err)
			}
			if n.read(uri) {
				t.Errorf("allow_unlisted_pins %v: %s was read from the server", allow, uri)
			}
		}
	}
}

func TestUnlistedPinsNeedTheServersOptIn(t *testing.T) {
	n := newNaiveFileServer("")
	eng := fileEngine(t, n, true, config.Limits{})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "x", TokenBudget: 100, Pinned: pin("file:///srv/.hidden_secret")})
	if err != nil || len(res.Items) == 0 || res.Items[0].URI != "file:///srv/.hidden_secret" || !n.read("file:///srv/.hidden_secret") {
		t.Fatalf("allow_unlisted_pins: %+v, %v", res, err)
	}
}

func TestRequestLimits(t *testing.T) {
	n := newNaiveFileServer("file:///srv/docs/{name}")
	eng := fileEngine(t, n, false, config.Limits{MaxPins: 4, MaxReads: 2})
	var many []string
	for i := range 5 {
		many = append(many, fmt.Sprintf("file:///srv/docs/p%d", i))
	}
	if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "x", TokenBudget: 100, Pinned: pin(many...)}); !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "max_pins") {
		t.Fatalf("5 pins with max_pins 4: %v", err)
	}
	// Three pins, two reads allowed: the third is not read.
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "x", TokenBudget: 1000, ValueFloor: new(float64), Pinned: pin(many[:3]...)})
	if err != nil {
		t.Fatal(err)
	}
	if !n.read(many[1]) || n.read(many[2]) || !omittedFor(res, many[2], "max_reads") {
		t.Errorf("max_reads 2: third read %v, omitted %+v", n.read(many[2]), res.Omitted)
	}
	// Reads counts the reads made, not the one refused.
	if res.Reads != 2 {
		t.Errorf("max_reads 2: Reads = %d, want 2", res.Reads)
	}
	// 200 bytes: a read of "contents of file:///srv/docs/pN" counts 114 (31
	// of text, 19 of URI, 64 for the item), so the second does not fit.
	eng = fileEngine(t, n, false, config.Limits{MaxResponseBytes: 200})
	res, err = eng.Assemble(t.Context(), engine.AssembleRequest{Query: "x", TokenBudget: 1000, Pinned: pin(many[3], many[0])})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || !omittedFor(res, many[0], "max_response_bytes") {
		t.Errorf("max_response_bytes 200: items %+v omitted %+v", res.Items, res.Omitted)
	}
}

func omittedFor(res *engine.AssembleResult, uri, detail string) bool {
	for _, o := range res.Omitted {
		if o.URI == uri && o.Reason == selector.OmitReadFailed && strings.Contains(o.Detail, detail) {
			return true
		}
	}
	return false
}

// Pins matched against a server's templates cost a bounded amount of work
// per request: a template match can take tens of milliseconds, and a
// server may have a thousand templates, all sharing the pins' prefix.
func TestPinsAgainstManyTemplatesAreBounded(t *testing.T) {
	srv := mcptest.NewServer(map[string]string{"x://readme": "the readme"}, nil)
	for i := range 1000 {
		srv.AddResourceTemplate(&mcpsdk.ResourceTemplate{URITemplate: fmt.Sprintf("x://{a%d,b%d}", i, i), Name: "pair"}, nil)
	}
	cfg := &config.Config{Servers: []config.Server{{Name: "fs", Transport: config.TransportStdio, Command: "unused"}}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": srv}, engine.Options{Config: cfg})
	var pins []resource.Key
	for i := range 32 {
		// Under the length matched, sharing every template's prefix, and
		// matching none ("}" is never in an expansion).
		pins = append(pins, resource.Key{Server: "fs", URI: fmt.Sprintf("x://%d", i) + strings.Repeat("a,", 240) + "}"})
	}
	done := make(chan error, 1)
	go func() {
		_, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "readme", TokenBudget: 100, Pinned: pins})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("pins no template yields: %v, want ErrInvalidArgument", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("checking 32 pins against 1,000 templates took over 30 s")
	}
}

// A server answering reads with thousands of empty items under long URIs
// cannot make an Assemble answer bigger than max_response_bytes allows:
// every item's URI is returned (as a dropped content), so it is counted
// as contents are. Before, 4 reads of 1,500 such items built 24 MB of
// dropped contents, outside the 8 MiB of contents a request may read.
func testEmptyItemsWithLongURIsCountAgainstTheResponseBytes(t *testing.T) {
	srv := mcptest.NewServer(nil, nil)
	long := strings.Repeat("u", 4000)
	var uris []string
	for i := range 4 {
		u := fmt.Sprintf("x://doc/%d", i)
		uris = append(uris, u)
		srv.AddResource(&mcpsdk.Resource{URI: u, Name: "doc"}, func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			res := &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "the doc numbered " + req.Params.URI}}}
			for j := range 1500 {
				res.Contents = append(res.Contents, &mcpsdk.ResourceContents{URI: fmt.Sprintf("%s/%s%d", req.Params.URI, long, j), MIMEType: "text/plain"})
			}
			return res, nil
		})
	}
	// Decoding 6 MB of items under the race detector on a loaded machine
	// took 16 s, past the read time 6 MB pay for at the default timeout.
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{ReadTimeout: 10 * time.Minute, RequestReadTime: 20 * time.Minute})
	var pins []resource.Key
	for _, u := range uris {
		pins = append(pins, resource.Key{Server: "s", URI: u})
	}
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "doc", TokenBudget: 10000, Pinned: pins})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, it := range res.Items {
		for _, d := range it.Dropped {
			n += len(d.URI) + len(d.Detail)
		}
	}
	for _, o := range res.Omitted {
		n += len(o.Detail)
	}
	if lim := config.DefaultMaxResponseBytes; n > lim {
		t.Errorf("dropped contents and details of %d bytes; want at most max_response_bytes (%d)", n, lim)
	}
	if len(res.Items) == 0 || !omittedFor(res, uris[len(uris)-1], "max_response_bytes") {
		t.Errorf("%d items; want the first read kept and the last dropped for max_response_bytes (omitted %d: %+v)", len(res.Items), len(res.Omitted), res.Omitted)
	}
}

// A query over MaxQueryBytes is refused by Search and Assemble before any
// work; one at the bound is answered.
func TestQueriesAreBoundedInBytes(t *testing.T) {
	n := newNaiveFileServer("")
	eng := fileEngine(t, n, false, config.Limits{})
	atBound := "readme " + strings.Repeat("x", engine.MaxQueryBytes-len("readme "))
	over := atBound + "y"
	if _, err := eng.Search(t.Context(), engine.SearchRequest{Query: over}); !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "65536") {
		t.Errorf("Search with a %d-byte query: %v, want ErrInvalidArgument naming the bound", len(over), err)
	}
	if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: over, TokenBudget: 100}); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Errorf("Assemble with a %d-byte query: %v, want ErrInvalidArgument", len(over), err)
	}
	if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: atBound, TokenBudget: 100}); err != nil {
		t.Errorf("Assemble with a query at the bound: %v", err)
	}
}

// A read that did not fit what its request had left of max_response_bytes
// is not downloaded again, to be dropped again, by the next request with
// as little left: its size is remembered for that version. Nor is one
// whose declared size is over what is left. Reads of 8 MB each were
// downloaded and decoded by every request, nine at a time.
func TestReadsThatCannotFitAreNotDownloaded(t *testing.T) {
	const limit, each = 10000, 6000
	srv := mcptest.NewServer(nil, nil)
	var mu gosync.Mutex
	reads := map[string]int{}
	read := func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		mu.Lock()
		reads[req.Params.URI]++
		mu.Unlock()
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain",
			Text: req.Params.URI + " " + strings.Repeat("notes ", each/6)}}}, nil
	}
	var pins []resource.Key
	for i := range 3 {
		u := fmt.Sprintf("x://doc/%d", i)
		srv.AddResource(&mcpsdk.Resource{URI: u, Name: "doc"}, read)
		pins = append(pins, resource.Key{Server: "s", URI: u})
	}
	srv.AddResource(&mcpsdk.Resource{URI: "x://big", Name: "doc", Size: 2 * limit}, read)
	pins = append(pins, resource.Key{Server: "s", URI: "x://big"})
	cfg := &config.Config{Servers: []config.Server{{Name: "s", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true}},
		Limits: config.Limits{MaxResponseBytes: limit}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Config: cfg})
	for range 3 {
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "notes", TokenBudget: 100000, Pinned: pins})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != 1 {
			t.Fatalf("%d items, want the one that fits", len(res.Items))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if reads["x://big"] != 0 {
		t.Errorf("a resource declaring %d bytes, over the %d a request may read, was read %d times", 2*limit, limit, reads["x://big"])
	}
	for _, u := range []string{"x://doc/1", "x://doc/2"} {
		if reads[u] != 1 {
			t.Errorf("%s, which never fits after the first, was read %d times in 3 requests, want once", u, reads[u])
		}
	}
}

// Blobs a request drops (include_binary off) are counted apart from what
// it may use: a server answering its top-ranked resource with a blob that
// fills max_response_bytes left every other server's text unread, the
// answer empty.
func TestDroppedBlobsDoNotUseUpTheResponseBytes(t *testing.T) {
	const limit = 10000
	blob := mcptest.NewServer(nil, nil)
	blob.AddResource(&mcpsdk.Resource{URI: "x://blob", Name: "gateway key rotation", MIMEType: "text/plain"},
		func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Blob: make([]byte, limit-90)}}}, nil
		})
	res, err := assembleBesideNotes(t, limit, "blob", blob, []resource.Key{{Server: "blob", URI: "x://blob"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || res.Items[0].URI != "doc://notes" {
		t.Errorf("items %+v, want the text server's notes (omitted %+v)", res.Items, res.Omitted)
	}
}

// assembleBesideNotes assembles "gateway key rotation" with max_response_bytes
// limit from the server other (as name) and a server "text" listing
// doc://notes, pinning pins and then the notes.
func assembleBesideNotes(t *testing.T, limit int, name string, other *mcpsdk.Server, pins []resource.Key) (*engine.AssembleResult, error) {
	t.Helper()
	text := mcptest.NewServer(map[string]string{"doc://notes": "notes on gateway key rotation\n"}, nil)
	cfg := &config.Config{Servers: []config.Server{
		{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true},
		{Name: "text", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true}},
		Limits: config.Limits{MaxResponseBytes: limit}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{name: other, "text": text}, engine.Options{Config: cfg})
	return eng.Assemble(t.Context(), engine.AssembleRequest{Query: "gateway key rotation", TokenBudget: 4000,
		Pinned: append(slices.Clone(pins), resource.Key{Server: "text", URI: "doc://notes"})})
}

// Bytes one server sends that the request cannot use (blobs it does not
// take, items claiming another URI) stop that server's reads, not every
// server's: two blobs of 4.2 MB, or 8 MB claiming another URI, from the
// top-ranked server left every other server's text unread.
func TestOneServersUnusableBytesDoNotStopOtherServersReads(t *testing.T) {
	const limit = 10000
	for _, tc := range []struct {
		name    string
		uris    []string
		content func(uri string) *mcpsdk.ResourceContents
	}{
		{"blobs", []string{"x://blob-1", "x://blob-2"}, func(uri string) *mcpsdk.ResourceContents {
			return &mcpsdk.ResourceContents{URI: uri, MIMEType: "text/plain", Blob: make([]byte, limit*6/10)}
		}},
		{"another URI", []string{"x://claim"}, func(string) *mcpsdk.ResourceContents {
			return &mcpsdk.ResourceContents{URI: "file:///etc/other", MIMEType: "text/plain", Text: strings.Repeat("x", limit-200)}
		}},
		// A blob just under the server's own share, then a text four
		// times what a request may read: the total counts the server
		// once, up to its share.
		{"past the total", []string{"x://a-blob", "x://b-big"}, func(uri string) *mcpsdk.ResourceContents {
			if strings.Contains(uri, "blob") {
				return &mcpsdk.ResourceContents{URI: uri, MIMEType: "text/plain", Blob: make([]byte, limit-200)}
			}
			return &mcpsdk.ResourceContents{URI: uri, MIMEType: "text/plain", Text: strings.Repeat("x", 4*limit)}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := mcptest.NewServer(nil, nil)
			var pins []resource.Key
			for _, u := range tc.uris {
				bad.AddResource(&mcpsdk.Resource{URI: u, Name: "gateway key rotation", MIMEType: "text/plain"},
					func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{tc.content(req.Params.URI)}}, nil
					})
				pins = append(pins, resource.Key{Server: "bad", URI: u})
			}
			res, err := assembleBesideNotes(t, limit, "bad", bad, pins)
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, it := range res.Items {
				uris = append(uris, it.URI)
			}
			if !slices.Contains(uris, "doc://notes") {
				t.Errorf("items %q, want the text server's notes (omitted %+v)", uris, res.Omitted)
			}
		})
	}
}

// A server's error message is cut to mcp.MaxErrorMessageBytes before the
// daemon masks it: a configured header value it quotes across the cut
// leaves a piece that is no whole secret, and is masked as one.
func TestAnErrorCutInsideASecretShowsNoPieceOfIt(t *testing.T) {
	const key = "sk-live-0123456789abcdefghijklmnopqrstuvwxyzAB"
	srv := mcptest.NewServer(nil, nil)
	srv.AddResource(&mcpsdk.Resource{URI: "x://doc", Name: "gateway key rotation"},
		func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
			return nil, fmt.Errorf("%s bad key %s", strings.Repeat("p", mcp.MaxErrorMessageBytes-30), key)
		})
	cfg := &config.Config{Servers: []config.Server{{Name: "s", Transport: config.TransportHTTP, URL: "http://127.0.0.1:9/mcp",
		Headers: map[string]string{"X-Api-Key": key}, NoContentIndex: true}}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": srv}, engine.Options{Config: cfg, ShowServerText: true})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "gateway key rotation", TokenBudget: 4000,
		Pinned: []resource.Key{{Server: "s", URI: "x://doc"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Omitted) != 1 {
		t.Fatalf("omitted %+v, want the read that failed", res.Omitted)
	}
	d := res.Omitted[0].Detail
	if strings.Contains(d, key[:8]) || !strings.Contains(d, "bad key "+redact.Mask+redact.Cut) {
		t.Errorf("detail ends %q; want the piece of the key before the cut masked", d[max(0, len(d)-80):])
	}
}

// Once servers together have sent a request all the unusable bytes it
// downloads (maxDroppedServers × max_response_bytes), a server that sent
// none is still read: three servers answering with blobs the request does
// not take left every other server's candidates refused.
func TestServersThatDroppedNothingAreReadPastTheDroppedTotal(t *testing.T) {
	const limit = 10000
	servers := map[string]*mcpsdk.Server{"text": mcptest.NewServer(map[string]string{"doc://notes": "notes on gateway key rotation\n"}, nil)}
	cfg := &config.Config{Limits: config.Limits{MaxResponseBytes: limit},
		Servers: []config.Server{{Name: "text", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true}}}
	var pins []resource.Key
	for i := range 3 {
		name := fmt.Sprintf("blobs%d", i)
		bad := mcptest.NewServer(nil, nil)
		uri := fmt.Sprintf("x://blob-%d", i)
		bad.AddResource(&mcpsdk.Resource{URI: uri, Name: "gateway key rotation", MIMEType: "text/plain"},
			func(_ context.Context, req *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Blob: make([]byte, limit*12/10)}}}, nil
			})
		servers[name] = bad
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true})
		pins = append(pins, resource.Key{Server: name, URI: uri})
	}
	eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg})
	res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "gateway key rotation", TokenBudget: 4000,
		Pinned: append(pins, resource.Key{Server: "text", URI: "doc://notes"})})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Items, func(it selector.Item) bool { return it.URI == "doc://notes" }) {
		t.Errorf("items %+v, want the text server's notes (omitted %+v)", res.Items, res.Omitted)
	}
}

// What a caller learns of its own pins does not depend on the daemon's
// secrets: a pin that is a guess at a secret's start, before a cut mark,
// or at a server's whole password, comes back in the read's error as a
// wrong guess does, also where the server quotes it re-encoded, and is
// not refused; nor is a pin holding 8 bytes of a secret. Either would tell
// a caller its guesses, a byte or a dictionary at a time.
func TestPinsAreNoOracleForSecrets(t *testing.T) {
	const daemonToken = "dtok-9Qz81LmXw02VbNc7"
	srv := mcptest.NewServer(map[string]string{"file:///srv/docs/readme.md": "the readme"}, nil)
	srv.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if r, ok := req.(*mcpsdk.ReadResourceRequest); ok && strings.HasPrefix(r.Params.URI, "file:///srv/missing/") {
				// As the TypeScript SDK does: the URI quoted re-encoded.
				return nil, &jsonrpc.Error{Code: -32602, Message: "Resource " + strings.ReplaceAll(r.Params.URI, " ", "%20") + " not found"}
			}
			return next(ctx, method, req)
		}
	})
	const password = "Winter2024!"
	cfg := &config.Config{Auth: config.Auth{Token: daemonToken}, Servers: []config.Server{
		{Name: "fs", Transport: config.TransportStdio, Command: "unused", AllowUnlistedPins: true, Env: map[string]string{"FS_PASSWORD": "Autumn2024!"}},
		{Name: "db", Transport: config.TransportStdio, Command: "unused", Env: map[string]string{"DB_PASSWORD": password}},
	}}
	eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"fs": srv, "db": mcptest.NewServer(map[string]string{"db://x": "x"}, nil)}, engine.Options{Config: cfg})
	detail := func(uri string) string {
		t.Helper()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "readme", TokenBudget: 1000, ValueFloor: new(float64), Pinned: pin(uri)})
		if err != nil {
			t.Fatalf("pin %s: %v", uri, err)
		}
		for _, o := range res.Omitted {
			if o.URI == uri {
				d := strings.ReplaceAll(o.Detail, strings.ReplaceAll(uri, " ", "%20"), "<pin>")
				return strings.ReplaceAll(d, uri, "<pin>")
			}
		}
		t.Fatalf("pin %s: not among the omitted %+v", uri, res.Omitted)
		return ""
	}
	right, wrong := detail("file:///srv/missing/"+daemonToken[:7]+"…"), detail("file:///srv/missing/dtok-Zz…")
	if right != wrong || strings.Contains(right, redact.Mask) || !strings.Contains(right, "not found") {
		t.Errorf("a right guess reads %q, a wrong one %q", right, wrong)
	}
	right, wrong = detail("file:///srv/missing/a b/"+daemonToken[:7]+"..."), detail("file:///srv/missing/a b/dtok-Zz...")
	if right != wrong || strings.Contains(right, redact.Mask) {
		t.Errorf("a right guess reads %q, a wrong one %q", right, wrong)
	}
	right, wrong = detail("file:///srv/missing/a,"+password+",b"), detail("file:///srv/missing/a,Summer2024!,b")
	if right != wrong || strings.Contains(right, redact.Mask) {
		t.Errorf("the db server's password reads %q, another word %q", right, wrong)
	}
	right, wrong = detail("file:///srv/missing/a,Autumn2024!,b"), detail("file:///srv/missing/a,Summer2024!,b")
	if right != wrong || strings.Contains(right, redact.Mask) {
		t.Errorf("the fs server's own password reads %q, another word %q", right, wrong)
	}
	right, wrong = detail("file:///srv/missing/x"+daemonToken[5:13]), detail("file:///srv/missing/x9Qz81LmXq")
	if right != wrong || strings.Contains(right, redact.Mask) {
		t.Errorf("8 bytes of the token read %q, 8 others %q", right, wrong)
	}
}
