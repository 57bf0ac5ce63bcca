package mcpserver_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
)

func TestHTTPEndpointRefusesRebindingAndCrossOriginRequests(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler()) // on 127.0.0.1
	defer ts.Close()
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
	post := func(host string, header map[string]string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(initialize))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("", nil); code != http.StatusOK {
		t.Errorf("a host's initialize: HTTP %d, want 200", code)
	}
	if code := post("evil.example:7879", nil); code != http.StatusForbidden {
		t.Errorf("Host evil.example (DNS rebinding): HTTP %d, want 403", code)
	}
	if code := post("", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("a cross-site browser request: HTTP %d, want 403", code)
	}
}

// A contextd whose configuration lists its own mcp_listen (the README's
// VS Code entry in the host file it reads) does not mirror itself: each
// list_changed it sent itself added its entries one level deeper, every
// read going round through its own endpoint. Its server names the process
// in initialize's _meta, and its client refuses a server so named; another
// client, or another contextd, is answered as ever.
func TestAContextdDoesNotMirrorItself(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil)}, nil, engine.Options{})
	ts := httptest.NewServer(f.srv.HTTPHandler())
	defer ts.Close()
	_, err := mcp.Connect(t.Context(), config.Server{Name: "contextd", Transport: config.TransportHTTP, URL: ts.URL}, nil)
	if !errors.Is(err, mcp.ErrSelf) {
		t.Fatalf("connecting to its own endpoint: %v, want ErrSelf", err)
	}
	cs := f.connectVersion(t, nil, "2025-11-25") // initialize, not server/discover
	if got, _ := cs.InitializeResult().Meta[mcp.InstanceMetaKey].(string); got != mcp.Instance() {
		t.Fatalf("initialize _meta %v; want this process named", cs.InitializeResult().Meta)
	}
}

// What contextd's MCP server lists is remembered, with the server each
// entry was mirrored from: a bridge passing the list back under opaque
// URIs, while a mirror lists it, is known as this contextd (see
// mcp.ListsServedBack); the entries' own server is not.
func TestListedPagesAreRemembered(t *testing.T) {
	f := newFacade(t, map[string]*mcpsdk.Server{"a": mcptest.NewServer(map[string]string{"doc://a1": "alpha", "doc://a2": "beta"}, nil)}, nil, engine.Options{})
	cs := f.connect(t, nil)
	from := time.Now()
	res, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var back []mcp.ListedEntry
	for _, r := range res.Resources {
		back = append(back, mcp.ListedEntry{Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType})
	}
	to := time.Now()
	if len(back) != 2 || !f.eng.ServedLists().ListsServedBack("hub", back, time.Time{}, to, true) {
		t.Errorf("%d entries listed; a bridge known before is no longer known by the entries it lists back", len(back))
	}
	if f.eng.ServedLists().ListsServedBack("a", back, time.Time{}, to, true) {
		t.Error("the server the entries were mirrored from is taken for this contextd")
	}
	// First known only by entries held as many times as the page held
	// them, and twice or more (see TestAServerRepeatingANameIsNotTakenForContextd).
	twice := append(append([]mcp.ListedEntry{}, back...), back...)
	if f.eng.ServedLists().ListsServedBack("twin", back, from, to, false) || f.eng.ServedLists().ListsServedBack("twin", twice, from, to, false) {
		t.Error("a server listing entries other than as the page held them is taken for this contextd")
	}
}

// A server that repeats a name (README.md in four folders) beside another
// that lists it once is not this contextd, whatever a host listed: a
// bridge passes a listed page on whole, each entry as many times as the
// page held it.
func TestAServerRepeatingANameIsNotTakenForContextd(t *testing.T) {
	lists := &mcp.ServedLists{}
	readme := mcp.ListedEntry{Name: "README.md", MIMEType: "text/markdown"}
	var page, mono []mcp.ListedEntry
	for range 4 {
		e := readme
		e.Origin = "mono"
		page, mono = append(page, e), append(mono, readme)
	}
	beta := readme
	beta.Origin = "beta"
	page = append(page, beta, mcp.ListedEntry{Origin: "mono", Name: "go.mod"}, mcp.ListedEntry{Origin: "mono", Name: "Makefile"})
	mono = append(mono, mcp.ListedEntry{Name: "go.mod"}, mcp.ListedEntry{Name: "Makefile"})
	from := time.Now()
	lists.Note(page)
	to := time.Now()
	if lists.ListsServedBack("mono", mono, from, to, false) {
		t.Error("a server repeating README.md beside another that has it once is taken for this contextd")
	}
	// The page passed on whole, beside itself one level down: known.
	var whole []mcp.ListedEntry
	for _, e := range page {
		e.Origin = ""
		whole = append(whole, e)
	}
	lists.Note(append(append([]mcp.ListedEntry{}, page...), page...))
	if !lists.ListsServedBack("hub", append(whole, whole...), from, time.Now(), false) {
		t.Error("a bridge passing the page on whole, beside itself one level down, is not known")
	}
}
