package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/redact"
)

// fake is a loopback stand-in for an embeddings API. By default it answers
// every input with a deterministic vector of dim coordinates (not unit
// length, as some servers answer); script, when set, answers a request
// first (call counts from 1) and returns false to fall through to the
// normal answer.
type fake struct {
	provider string
	dim      int
	key      string // required bearer token, if set

	mu       sync.Mutex
	calls    int
	batches  []int // inputs per request that reached the normal answer
	bodies   []map[string]any
	inFlight atomic.Int32
	maxIn    atomic.Int32
	delay    time.Duration
	script   func(w http.ResponseWriter, call int, inputs []string) bool
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxIn.Load()
		if n <= m || f.maxIn.CompareAndSwap(m, n) {
			break
		}
	}
	want := "/v1/embeddings"
	if f.provider == Ollama {
		want = "/api/embed"
	}
	if r.Method != http.MethodPost || r.URL.Path != want {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	f.mu.Lock()
	f.calls++
	call := f.calls
	f.mu.Unlock()
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	var inputs []string
	for _, x := range body["input"].([]any) {
		inputs = append(inputs, x.(string))
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.mu.Unlock()
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	if f.script != nil && f.script(w, call, inputs) {
		return
	}
	f.mu.Lock()
	f.batches = append(f.batches, len(inputs))
	f.mu.Unlock()
	vecs := make([][]float32, len(inputs))
	for i, in := range inputs {
		vecs[i] = vecOf(in, f.dim)
	}
	writeVecs(w, f.provider, vecs)
}

func writeVecs(w http.ResponseWriter, provider string, vecs [][]float32) {
	w.Header().Set("Content-Type", "application/json")
	if provider == Ollama {
		json.NewEncoder(w).Encode(map[string]any{"model": "m", "embeddings": vecs})
		return
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	var data []item
	for i, v := range vecs {
		data = append(data, item{"embedding", i, v})
	}
	slices.Reverse(data) // the API does not promise order; index does
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m"})
}

// vecOf is a deterministic vector for text, of norm about 3.
func vecOf(text string, dim int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	s := h.Sum64()
	v := make([]float32, dim)
	for i := range v {
		s = s*6364136223846793005 + 1442695040888963407
		v[i] = float32(int64(s>>33)%1000)/100 + 0.5
	}
	return v
}

type recorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (r *recorder) sleep(_ context.Context, d time.Duration) error {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
	return nil
}

func newFake(t *testing.T, provider string, dim int) (*fake, *httptest.Server) {
	t.Helper()
	f := &fake{provider: provider, dim: dim}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func baseURL(srv *httptest.Server, provider string) string {
	if provider == OpenAI {
		return srv.URL + "/v1"
	}
	return srv.URL
}

func newEmbedder(t *testing.T, opts Options) (*Embedder, *recorder) {
	t.Helper()
	e, err := New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	e.sleep = rec.sleep
	return e, rec
}

func checkUnit(t *testing.T, v []float32, dim int) {
	t.Helper()
	if len(v) != dim {
		t.Fatalf("vector of %d dimensions, want %d", len(v), dim)
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Fatalf("squared norm %v, want 1", n)
	}
}

func TestBatchesInOrder(t *testing.T) {
	for _, p := range []string{OpenAI, Ollama} {
		t.Run(p, func(t *testing.T) {
			f, srv := newFake(t, p, 8)
			e, _ := newEmbedder(t, Options{Provider: p, URL: baseURL(srv, p), Model: "m", Dimensions: 8, BatchSize: 4})
			texts := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
			vecs, err := e.EmbedBatch(t.Context(), texts)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vecs {
				checkUnit(t, v, 8)
				want := vecOf(texts[i], 8)
				if err := normalise(want); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(v, want) {
					t.Fatalf("vector %d is not text %q's", i, texts[i])
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			got := slices.Sorted(slices.Values(f.batches))
			if !slices.Equal(got, []int{2, 4, 4}) {
				t.Errorf("batches of %v inputs, want 4, 4 and 2", f.batches)
			}
			if d, _ := f.bodies[0]["dimensions"].(float64); d != 8 {
				t.Errorf("dimensions sent: %v, want 8", f.bodies[0]["dimensions"])
			}
			if e.Name() != p+":m:d8:l2" {
				t.Errorf("Name %q", e.Name())
			}
		})
	}
}

func TestDimensionProbe(t *testing.T) {
	for _, p := range []string{OpenAI, Ollama} {
		t.Run(p, func(t *testing.T) {
			f, srv := newFake(t, p, 12)
			e, _ := newEmbedder(t, Options{Provider: p, URL: baseURL(srv, p), Model: "m"})
			if e.Dim() != 12 {
				t.Fatalf("Dim %d, want 12 (learned from the server)", e.Dim())
			}
			if _, sent := f.bodies[0]["dimensions"]; sent {
				t.Error("dimensions sent although not configured")
			}
			v, err := e.Embed(t.Context(), "query")
			if err != nil {
				t.Fatal(err)
			}
			checkUnit(t, v, 12)
		})
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	for _, p := range []string{OpenAI, Ollama} {
		t.Run(p, func(t *testing.T) {
			f, srv := newFake(t, p, 4)
			f.script = func(w http.ResponseWriter, call int, _ []string) bool {
				switch call {
				case 1:
					w.Header().Set("Retry-After", "7")
					w.WriteHeader(http.StatusTooManyRequests)
					fmt.Fprint(w, `{"error":{"message":"Rate limit reached"}}`)
					return true
				case 2:
					w.Header().Set("Retry-After-Ms", "250")
					w.WriteHeader(http.StatusTooManyRequests)
					return true
				}
				return false
			}
			e, rec := newEmbedder(t, Options{Provider: p, URL: baseURL(srv, p), Model: "m", Dimensions: 4})
			if _, err := e.Embed(t.Context(), "x"); err != nil {
				t.Fatal(err)
			}
			if len(rec.waits) != 2 {
				t.Fatalf("waited %v, want two waits", rec.waits)
			}
			if w := rec.waits[0]; w < 7*time.Second || w > 7*time.Second+700*time.Millisecond {
				t.Errorf("first wait %v, want 7s (Retry-After) plus at most 10%% jitter", w)
			}
			if w := rec.waits[1]; w < 250*time.Millisecond || w > 275*time.Millisecond {
				t.Errorf("second wait %v, want 250ms (retry-after-ms) plus at most 10%% jitter", w)
			}
		})
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	f, srv := newFake(t, OpenAI, 4)
	f.script = func(w http.ResponseWriter, call int, _ []string) bool {
		if call <= 2 {
			w.WriteHeader(http.StatusInternalServerError + call - 1) // 500, then 501
			return true
		}
		return false
	}
	e, rec := newEmbedder(t, Options{Provider: OpenAI, URL: baseURL(srv, OpenAI), Model: "m", Dimensions: 4, MinBackoff: 100 * time.Millisecond})
	v, err := e.Embed(t.Context(), "x")
	if err != nil {
		t.Fatal(err)
	}
	checkUnit(t, v, 4)
	// Exponential with equal jitter: [50, 100] ms, then [100, 200] ms.
	if len(rec.waits) != 2 || rec.waits[0] < 50*time.Millisecond || rec.waits[0] > 100*time.Millisecond ||
		rec.waits[1] < 100*time.Millisecond || rec.waits[1] > 200*time.Millisecond {
		t.Errorf("waits %v, want one in [50ms, 100ms] then one in [100ms, 200ms]", rec.waits)
	}
}

func TestRetriesRunOut(t *testing.T) {
	f, srv := newFake(t, Ollama, 4)
	f.script = func(w http.ResponseWriter, call int, _ []string) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":"model is loading"}`)
		return true
	}
	var log bytes.Buffer
	e, rec := newEmbedder(t, Options{Provider: Ollama, URL: baseURL(srv, Ollama), Model: "m", Dimensions: 4, MaxRetries: 3, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	_, err := e.Embed(t.Context(), "x")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "HTTP 503") || !strings.Contains(err.Error(), "4 attempts") || !strings.Contains(log.String(), "model is loading") {
		t.Fatalf("err = %v, log %q; want ErrUnavailable after 4 attempts, the server's message logged", err, log.String())
	}
	if f.calls != 4 || len(rec.waits) != 3 {
		t.Errorf("%d requests and %d waits, want 4 and 3", f.calls, len(rec.waits))
	}
}

func TestTimeoutIsRetried(t *testing.T) {
	f, srv := newFake(t, OpenAI, 4)
	f.script = func(w http.ResponseWriter, call int, _ []string) bool {
		if call == 1 {
			time.Sleep(300 * time.Millisecond)
		}
		return false
	}
	e, rec := newEmbedder(t, Options{Provider: OpenAI, URL: baseURL(srv, OpenAI), Model: "m", Dimensions: 4, Timeout: 100 * time.Millisecond})
	if _, err := e.Embed(t.Context(), "x"); err != nil {
		t.Fatal(err)
	}
	if len(rec.waits) != 1 {
		t.Errorf("waits %v, want one retry after the timed-out attempt", rec.waits)
	}
}

func TestUnauthorizedKeepsTheKeySecret(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	for _, p := range []string{OpenAI, Ollama} {
		t.Run(p, func(t *testing.T) {
			f, srv := newFake(t, p, 4)
			f.key = "the-right-key"
			_, err := New(t.Context(), Options{Provider: p, URL: baseURL(srv, p), Model: "m", APIKey: key})
			if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "check api_key") {
				t.Fatalf("err = %v, want ErrUnauthorized naming api_key", err)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "0123456789abcdef") {
				t.Fatalf("the key leaked: %v", err)
			}
			if f.calls != 1 {
				t.Errorf("%d requests, want 1 (401 is not retried)", f.calls)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	_, srv := newFake(t, OpenAI, 4)
	_, err := New(t.Context(), Options{Provider: OpenAI, URL: srv.URL + "/wrong", Model: "nomic", Dimensions: 4})
	if err != nil {
		t.Fatalf("New with dimensions set sends nothing: %v", err)
	}
	e, _ := newEmbedder(t, Options{Provider: OpenAI, URL: srv.URL + "/wrong", Model: "nomic", Dimensions: 4})
	_, err = e.Embed(t.Context(), "x")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `model "nomic"`) {
		t.Fatalf("err = %v, want ErrNotFound naming the model", err)
	}
}

func TestBadAnswers(t *testing.T) {
	tests := []struct {
		name, provider string
		answer         string
		want           string
	}{
		{"malformed JSON", OpenAI, `{"data": [`, "not the embeddings API's JSON"},
		{"malformed JSON", Ollama, `<html>502</html>`, "not Ollama's /api/embed JSON"},
		{"NaN literal", Ollama, `{"embeddings": [[NaN, 1, 1, 1], [1, 1, 1, 1]]}`, "not Ollama's /api/embed JSON"},
		{"overflow", OpenAI, `{"data": [{"index": 0, "embedding": [1e39, 1, 1, 1]}, {"index": 1, "embedding": [1, 1, 1, 1]}]}`, "not the embeddings API's JSON"},
		{"zero vector", Ollama, `{"embeddings": [[0, 0, 0, 0], [1, 1, 1, 1]]}`, "input 0: the zero vector"},
		{"wrong dimension", OpenAI, `{"data": [{"index": 0, "embedding": [1, 1, 1, 1]}, {"index": 1, "embedding": [1, 1, 1]}]}`, "input 1: a vector of 3 dimensions, want 4"},
		{"wrong dimension", Ollama, `{"embeddings": [[1, 1, 1, 1, 1], [1, 1, 1, 1, 1]]}`, "input 0: a vector of 5 dimensions, want 4"},
		{"partial batch", OpenAI, `{"data": [{"index": 0, "embedding": [1, 1, 1, 1]}]}`, "1 embeddings for 2 inputs"},
		{"partial batch", Ollama, `{"embeddings": [[1, 1, 1, 1]]}`, "1 embeddings for 2 inputs"},
		{"repeated index", OpenAI, `{"data": [{"index": 0, "embedding": [1, 1, 1, 1]}, {"index": 0, "embedding": [1, 1, 1, 1]}]}`, "index 0 is out of range or repeated"},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.name, func(t *testing.T) {
			f, srv := newFake(t, tt.provider, 4)
			f.script = func(w http.ResponseWriter, _ int, _ []string) bool {
				fmt.Fprint(w, tt.answer)
				return true
			}
			e, rec := newEmbedder(t, Options{Provider: tt.provider, URL: baseURL(srv, tt.provider), Model: "m", Dimensions: 4})
			_, err := e.EmbedBatch(t.Context(), []string{"a", "b"})
			if !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrBadResponse saying %q", err, tt.want)
			}
			if len(rec.waits) != 0 || f.calls != 1 {
				t.Errorf("%d requests, waits %v: a bad answer is not retried", f.calls, rec.waits)
			}
		})
	}
}

func TestConcurrencyLimit(t *testing.T) {
	f, srv := newFake(t, OpenAI, 4)
	f.delay = 20 * time.Millisecond
	e, _ := newEmbedder(t, Options{Provider: OpenAI, URL: baseURL(srv, OpenAI), Model: "m", Dimensions: 4, BatchSize: 2, Concurrency: 3})
	texts := make([]string, 40)
	for i := range texts {
		texts[i] = fmt.Sprint("t", i)
	}
	var wg sync.WaitGroup
	for range 3 { // batches and single queries share the limit
		wg.Go(func() {
			if _, err := e.EmbedBatch(t.Context(), texts); err != nil {
				t.Error(err)
			}
			if _, err := e.Embed(t.Context(), "q"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m := f.maxIn.Load(); m > 3 || m < 2 {
		t.Errorf("at most %d requests in flight, want 3 (the limit; at least 2)", m)
	}
}

func TestFailingBatchFailsTheCall(t *testing.T) {
	f, srv := newFake(t, OpenAI, 4)
	f.script = func(w http.ResponseWriter, _ int, inputs []string) bool {
		if inputs[0] == "t4" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":{"message":"input too long"}}`)
			return true
		}
		return false
	}
	var log bytes.Buffer
	e, _ := newEmbedder(t, Options{Provider: OpenAI, URL: baseURL(srv, OpenAI), Model: "m", Dimensions: 4, BatchSize: 2, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	texts := []string{"t0", "t1", "t2", "t3", "t4", "t5"}
	vecs, err := e.EmbedBatch(t.Context(), texts)
	if !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "HTTP 400") || vecs != nil || !strings.Contains(log.String(), "input too long") {
		t.Fatalf("EmbedBatch = %d vectors, %v, log %q; want none and ErrRejected, the server's message logged", len(vecs), err, log.String())
	}
}

func TestInputsAreCutAndNeverEmpty(t *testing.T) {
	f, srv := newFake(t, Ollama, 4)
	e, _ := newEmbedder(t, Options{Provider: Ollama, URL: baseURL(srv, Ollama), Model: "m", Dimensions: 4, MaxInputBytes: 5})
	if _, err := e.EmbedBatch(t.Context(), []string{"", "héllo wörld"}); err != nil {
		t.Fatal(err)
	}
	in := f.bodies[0]["input"].([]any)
	if in[0] != " " || in[1] != "héll" {
		t.Errorf("inputs sent %q, want a space and the text cut at a character boundary within 5 bytes", in)
	}
	if f.bodies[0]["truncate"] != true {
		t.Error("Ollama request without truncate: true")
	}
}

func TestCancelledContext(t *testing.T) {
	f, srv := newFake(t, OpenAI, 4)
	f.script = func(w http.ResponseWriter, _ int, _ []string) bool {
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	}
	e, err := New(t.Context(), Options{Provider: OpenAI, URL: baseURL(srv, OpenAI), Model: "m", Dimensions: 4, MinBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := e.Embed(ctx, "x"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("a cancelled call waited out its backoff")
	}
}

func TestBadOptions(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Provider: "cohere", Model: "m"}, `provider "cohere" is not`},
		{Options{Provider: OpenAI}, "model is required"},
		{Options{Provider: OpenAI, Model: "m", URL: "ftp://x"}, "not an http(s) URL"},
		{Options{Provider: OpenAI, Model: "m", Dimensions: -1}, "negative"},
		{Options{Provider: Ollama, Model: "m", URL: "http://user:hunter22@host.invalid/?key=abcdef", MaxRetries: -1}, ""},
	} {
		_, err := New(t.Context(), tt.opts)
		if tt.want == "" {
			// an unreachable host: the probe fails, without the URL's secrets
			if err == nil || strings.Contains(err.Error(), "hunter22") || strings.Contains(err.Error(), "abcdef") {
				t.Errorf("New(%v) = %v, want an error without the URL's secrets", tt.opts.URL, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v, want %q", tt.opts, err, tt.want)
		}
	}
}

func TestEndpoint(t *testing.T) {
	for _, tt := range []struct{ provider, url, want string }{
		{OpenAI, "", "https://api.openai.com/v1/embeddings"},
		{OpenAI, "http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/embeddings"},
		{OpenAI, "http://h/v1/embeddings", "http://h/v1/embeddings"},
		{OpenAI, "https://h/openai/v1?api-version=2024-10-21", "https://h/openai/v1/embeddings?api-version=2024-10-21"},
		{Ollama, "", "http://localhost:11434/api/embed"},
		{Ollama, "http://gpu:11434/", "http://gpu:11434/api/embed"},
		{Ollama, "http://gpu:11434/api", "http://gpu:11434/api/embed"},
		{Ollama, "http://gpu:11434/api/embed", "http://gpu:11434/api/embed"},
	} {
		e, err := New(t.Context(), Options{Provider: tt.provider, URL: tt.url, Model: "m", Dimensions: 4})
		if err != nil {
			t.Fatal(err)
		}
		if e.endpoint != tt.want {
			t.Errorf("%s %q: endpoint %q, want %q", tt.provider, tt.url, e.endpoint, tt.want)
		}
	}
}

// A hostile or broken server cannot make one answer cost much more memory
// than its batch needs: an answer of millions of empty vectors (or empty
// objects) decoded whole took 10 GB of allocations and 5.8 GB of memory
// for a 180 MiB body of "[]," before it was refused for its count.
func TestHugeAnswersCostWhatTheBatchNeeds(t *testing.T) {
	for _, tt := range []struct{ provider, answer string }{
		{Ollama, `{"embeddings":[` + strings.Repeat("[],", 6<<20) + `[]]}`},
		{OpenAI, `{"data":[` + strings.Repeat("{},", 6<<20) + `{}]}`},
		// Within the bound of a batch of two, but far more elements.
		{Ollama, `{"embeddings":[` + strings.Repeat("[],", 20<<10) + `[]]}`},
		{OpenAI, `{"data":[` + strings.Repeat("{},", 20<<10) + `{}]}`},
	} {
		t.Run(fmt.Sprintf("%s/%d", tt.provider, len(tt.answer)), func(t *testing.T) {
			body := []byte(tt.answer)
			f, srv := newFake(t, tt.provider, 4)
			f.script = func(w http.ResponseWriter, _ int, _ []string) bool {
				w.Write(body)
				return true
			}
			e, _ := newEmbedder(t, Options{Provider: tt.provider, URL: baseURL(srv, tt.provider), Model: "m", Dimensions: 4})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := e.EmbedBatch(t.Context(), []string{"a", "b"})
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrBadResponse) {
				t.Fatalf("err = %v, want ErrBadResponse", err)
			}
			if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
				t.Errorf("refusing a %d-byte answer for 2 inputs allocated %d MiB (%v)", len(body), got>>20, err)
			}
		})
	}
}

// The dimension probe does not accept a vector of any length: every later
// vector, and the index, would take its size (a 65,536-dimension answer
// took the daemon to 1.5 GB for 1,500 resources). A model that long can
// be used with its dimensions set.
func TestDimensionProbeIsBounded(t *testing.T) {
	const tooLong = 8193
	f, srv := newFake(t, Ollama, tooLong)
	_ = f
	_, err := New(t.Context(), Options{Provider: Ollama, URL: srv.URL, Model: "m"})
	if !errors.Is(err, ErrBadResponse) || !strings.Contains(err.Error(), "set dimensions") {
		t.Fatalf("New with a %d-dimension probe answer: err = %v, want ErrBadResponse saying to set dimensions", tooLong, err)
	}
	e, err := New(t.Context(), Options{Provider: Ollama, URL: srv.URL, Model: "m", Dimensions: tooLong})
	if err != nil {
		t.Fatalf("New with dimensions %d set: %v", tooLong, err)
	}
	if v, err := e.Embed(t.Context(), "x"); err != nil || len(v) != tooLong {
		t.Fatalf("Embed with dimensions %d set: %d dimensions, %v", tooLong, len(v), err)
	}
}

// A redirect to another origin does not carry the API key: net/http keeps
// Authorization for the same host name on another port or scheme (and for
// subdomains), here another loopback port, as another local user's would be.
func TestAPIKeyDoesNotFollowARedirectToAnotherOrigin(t *testing.T) {
	redirector, got := redirectToOtherOrigin(t, "Authorization", "/v1/embeddings")
	e, _ := newEmbedder(t, Options{Provider: OpenAI, URL: redirector + "/v1", Model: "m", Dimensions: 4, APIKey: "sk-redirected-key-0123456789", MaxRetries: -1})
	_, err := e.Embed(t.Context(), "x")
	if err == nil {
		t.Fatal("embedding through a cross-origin redirect succeeded")
	}
	if a, _ := got.Load().(string); strings.Contains(a, "sk-redirected") {
		t.Errorf("the other origin received Authorization %q", a)
	}
	if strings.Contains(err.Error(), "sk-redirected") {
		t.Errorf("the error quotes the key: %v", err)
	}
}

// A key given in the URL's query (no api_key) does not reach another
// origin as the Referer net/http would send on a redirect.
func TestAQueryKeyDoesNotFollowARedirectAsReferer(t *testing.T) {
	redirector, got := redirectToOtherOrigin(t, "Referer", "/api/embed")
	e, _ := newEmbedder(t, Options{Provider: Ollama, URL: redirector + "/?key=query-key-0123456789", Model: "m", Dimensions: 4, MaxRetries: -1})
	if _, err := e.Embed(t.Context(), "x"); err == nil {
		t.Fatal("embedding through a redirect to a server that answers 418 succeeded")
	}
	r, ok := got.Load().(string)
	if !ok {
		t.Fatal("the redirect was not followed")
	}
	if r != "" {
		t.Errorf("the other origin received Referer %q", r)
	}
}

// A server that accepts the connection and never answers holds a query's
// vector for QueryTimeout, not for every attempt's Timeout and the waits
// between them.
func TestAQueryIsBoundedAsAWhole(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	e, _ := newEmbedder(t, Options{Provider: Ollama, URL: srv.URL, Model: "m", Dimensions: 8,
		Timeout: 2 * time.Second, MaxRetries: 5, QueryTimeout: 300 * time.Millisecond})
	start := time.Now()
	_, err := e.Embed(t.Context(), "what is the answer")
	if err == nil {
		t.Fatal("Embed against a server that never answers succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Embed took %v, want about the 300 ms query timeout", took)
	}
}

// redirectToOtherOrigin starts a server (another loopback port: another
// origin) that records the header named header of each request and
// answers 418, and one redirecting every request to path on it; it
// returns the redirecting server's URL and what was recorded.
func redirectToOtherOrigin(t *testing.T, header, path string) (string, *atomic.Value) {
	got := new(atomic.Value)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get(header))
		http.Error(w, "no", http.StatusTeapot)
	}))
	t.Cleanup(other.Close)
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirector.Close)
	return redirector.URL, got
}

// An embedding service that quotes its input in its errors tells a caller
// nothing about the API key: a query that is a guess at the key's start,
// before a cut mark, fails as a wrong guess does.
func TestErrorsQuotingTheQueryAreNoOracleForTheKey(t *testing.T) {
	const key = "sk-live-9Qz81LmXw02VbNc7"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": "bad input: " + strings.Join(req.Input, " ")}})
	}))
	t.Cleanup(srv.Close)
	e, _ := newEmbedder(t, Options{Provider: OpenAI, URL: srv.URL + "/v1", Model: "m", APIKey: key, Dimensions: 8})
	var msgs []string
	for _, guess := range []string{key[:10], "sk-live-Zz"} {
		_, err := e.Embed(t.Context(), "find x"+guess+"…")
		if err == nil {
			t.Fatalf("guess %q: no error", guess)
		}
		msgs = append(msgs, strings.ReplaceAll(err.Error(), guess, "<guess>"))
	}
	if msgs[0] != msgs[1] || strings.Contains(msgs[0], redact.Mask) {
		t.Errorf("a right guess fails with %q, a wrong one with %q", msgs[0], msgs[1])
	}
}

// What a service says in an error (its message, its status line) may
// quote what it was sent before, a caller's query: errors name the status
// code only, and the message goes to the log, with the key masked there.
func TestErrorsDoNotQuoteTheService(t *testing.T) {
	const key = "sk-live-9Qz81LmXw02VbNc7"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": "earlier input: alpha correcthorse omega; key " + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}})
	}))
	t.Cleanup(srv.Close)
	var log bytes.Buffer
	e, _ := newEmbedder(t, Options{Provider: OpenAI, URL: srv.URL + "/v1", Model: "m", APIKey: key, Dimensions: 8, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	_, err := e.EmbedBatch(t.Context(), []string{"a passage"})
	if err == nil || strings.Contains(err.Error(), "earlier input") || strings.Contains(err.Error(), redact.Mask) || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("err = %v; want the status code, not the service's message", err)
	}
	if !strings.Contains(log.String(), "earlier input") || strings.Contains(log.String(), "9Qz81") {
		t.Errorf("log %q; want the service's message, the key masked", log.String())
	}
}

// An answer net/http cannot parse is quoted by it (a status line of the
// service's words): the error says the answer was unreadable, and the log
// has the rest; a refused connection is worded as Go words it.
func TestTransportErrorsDoNotQuoteTheService(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Read(make([]byte, 4096))
				_, _ = c.Write([]byte("HTTP/1.1 earlier-input-alpha-correcthorse-omega\r\n\r\n"))
			}()
		}
	}()
	var log bytes.Buffer
	e, _ := newEmbedder(t, Options{Provider: OpenAI, URL: "http://" + lis.Addr().String() + "/v1", Model: "m", Dimensions: 8, MaxRetries: -1, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	_, err = e.EmbedBatch(t.Context(), []string{"a passage"})
	if err == nil || strings.Contains(err.Error(), "correcthorse") || !strings.Contains(err.Error(), "could not be read") {
		t.Errorf("err = %v; want an unreadable answer, not its words", err)
	}
	if !strings.Contains(log.String(), "correcthorse") {
		t.Errorf("log %q; want what the answer said", log.String())
	}
	lis.Close()
	_, err = e.EmbedBatch(t.Context(), []string{"a passage"})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("err = %v; want the refused connection named", err)
	}
}
