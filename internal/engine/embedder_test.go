package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// ollamaFake answers Ollama's /api/embed with bag-of-words vectors scaled
// by 3 (not unit length), counting inputs and requests, and refuses any
// request without the bearer key.
type ollamaFake struct {
	key              string
	inputs, requests atomic.Int64
	maxBatch         atomic.Int64
}

func (f *ollamaFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/api/embed" {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.key {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":"unauthorized: key ` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + ` is not valid"}`))
		return
	}
	var req struct {
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.requests.Add(1)
	f.inputs.Add(int64(len(req.Input)))
	if n := int64(len(req.Input)); n > f.maxBatch.Load() {
		f.maxBatch.Store(n) // one request at a time in this test's config
	}
	var bag indextest.BagEmbedder
	out := make([][]float32, len(req.Input))
	for i, t := range req.Input {
		v, _ := bag.Embed(r.Context(), t)
		for j := range v {
			v[j] *= 3
		}
		out[i] = v
	}
	json.NewEncoder(w).Encode(map[string]any{"model": "bag", "embeddings": out})
}

func startRemoteEngine(t *testing.T, dataDir string, cfg *config.Config, srv *mcpsdk.Server) (*engine.Engine, error) {
	t.Helper()
	eng, err := engine.New(t.Context(), engine.Options{Config: cfg,
		Dial: func(s config.Server) ctxsync.DialFunc { return mcptest.Dial(t, s.Name, srv) }})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait(); eng.Close() })
	if err := eng.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return eng, nil
}

// A configured remote embedder embeds the descriptors in batches and the
// queries through the same API; a restart with the same embedder sends
// the descriptors again to nobody; a refused key fails the start with an
// error that does not show it.
func TestRemoteEmbedderEndToEnd(t *testing.T) {
	fake := &ollamaFake{key: "ollama-secret-key-42"}
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	docs := map[string]string{
		"doc://architecture": "how the daemon is organised",
		"doc://weather":      "the forecast for tomorrow",
		"doc://invoices":     "paying and sending invoices",
	}
	cfgText := `
data_dir: ` + t.TempDir() + `
embedder:
  provider: ollama
  url: ` + api.URL + `
  model: bag
  api_key: ${OLLAMA_KEY}
  concurrency: 1
mcpServers:
  docs: {command: unused}
`
	cfg, err := config.Parse("c.yaml", []byte(cfgText), func(k string) (string, bool) {
		return map[string]string{"OLLAMA_KEY": fake.key}[k], k == "OLLAMA_KEY"
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := mcptest.NewServer(docs, nil)
	eng, err := startRemoteEngine(t, cfg.DataDir, cfg, srv)
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Search(t.Context(), engine.SearchRequest{Query: "forecast tomorrow"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].URI != "doc://weather" {
		t.Fatalf("Search ranked %+v, want doc://weather first", res)
	}
	if fake.maxBatch.Load() < 3 {
		t.Errorf("largest request carried %d inputs, want the 3 descriptors in one", fake.maxBatch.Load())
	}
	eng.Close()

	// Restart with the same embedder: descriptors load from data_dir.
	before := fake.inputs.Load()
	eng2, err := startRemoteEngine(t, cfg.DataDir, cfg, srv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eng2.Search(t.Context(), engine.SearchRequest{Query: "paying invoices"}); err != nil {
		t.Fatal(err)
	}
	if sent := fake.inputs.Load() - before; sent > 2 { // the dimension probe and the query
		t.Errorf("restart sent %d texts to the embedder, want only the probe and the query", sent)
	}
	eng2.Close()

	bad := *cfg
	r := *cfg.RemoteEmbedder
	r.APIKey = "wrong-key-0123456789"
	bad.RemoteEmbedder = &r
	_, err = startRemoteEngine(t, t.TempDir(), &bad, srv)
	if err == nil || !strings.Contains(err.Error(), "check api_key") || strings.Contains(err.Error(), r.APIKey) {
		t.Fatalf("start with a refused key: %v; want an error naming api_key without the key", err)
	}
}

// A query the embedding service rejects, quoting it back with its key:
// the caller is told what failed, the same for any words, and never the
// service's message (masked, it would say which word is the key; not
// masked, it would show the key).
func TestQueryEmbedErrorsAreNoOracleForTheKey(t *testing.T) {
	fake := &ollamaFake{key: "letmein2024"}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), "ECHO") {
			w.WriteHeader(http.StatusBadRequest)
			msg, _ := json.Marshal(map[string]string{"error": "bad input " + string(body) + " for key " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")})
			w.Write(msg)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	cfg, err := config.Parse("c.yaml", []byte(`
data_dir: `+t.TempDir()+`
embedder: {provider: ollama, url: `+api.URL+`, model: bag, api_key: letmein2024, concurrency: 1}
mcpServers:
  docs: {command: unused}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	eng, err := startRemoteEngine(t, cfg.DataDir, cfg, mcptest.NewServer(map[string]string{"doc://a": "alpha"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, guess := range []string{"letmein2024", "letmein2025"} {
		_, err := eng.Search(t.Context(), engine.SearchRequest{Query: "ECHO find " + guess + " now"})
		if err == nil {
			t.Fatalf("guess %s: no error", guess)
		}
		msgs = append(msgs, err.Error())
	}
	if msgs[0] != msgs[1] || strings.Contains(msgs[0], "letmein") || strings.Contains(msgs[0], "REDACTED") || !strings.Contains(msgs[0], "rejected") {
		t.Errorf("the key fails with %q, another word with %q; want the same, saying the embedder rejected it", msgs[0], msgs[1])
	}
}
