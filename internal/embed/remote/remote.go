// Package remote embeds text with an embedding server the user already
// runs: an OpenAI-compatible endpoint (POST {url}/embeddings, as OpenAI,
// Azure-style gateways, vLLM, llama.cpp's server, LM Studio, LocalAI and
// text-embeddings-inference answer it) or Ollama (POST {url}/api/embed).
//
// Both APIs take many inputs in one request, and an [Embedder] sends them
// so: [Embedder.EmbedBatch] cuts its texts into batches of
// Options.BatchSize and sends up to Options.Concurrency requests at once
// (queries through [Embedder.Embed] share that limit). A request answered
// with 429 or a 5xx status, or lost to a network error or a timeout, is
// retried with exponential backoff and jitter, waiting at least what a
// Retry-After (or retry-after-ms) header asks. Other answers fail at once
// with an error that says what to check: 401/403 the API key, 404 the URL
// and the model, 400 the server's own message.
//
// Every answer is checked before it is used: well-formed JSON, one vector
// per input (each input's index exactly once), each of the expected
// dimension, every coordinate finite and not all zero. Vectors are then
// normalised to unit length, as chromem-go requires; servers differ on
// whether they normalise.
//
// The API key goes only into the Authorization header, and only to the
// endpoint's origin: a redirect elsewhere (another scheme, host or port)
// fails the request. It never appears in
// an error or a log record: errors are passed through [redact] with the key
// and the URL's secrets before they leave the package.
//
// [Embedder.Name] is the embedder's identity for the index: provider,
// model, dimensions and normalisation (not the URL: the same model behind
// another host gives the same vectors). A change to any of them re-embeds
// the index.
package remote

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/contextd/contextd/internal/redact"
)

// Providers: the API an endpoint speaks.
const (
	OpenAI = "openai" // POST {url}/embeddings {"model", "input": [...], "dimensions"}
	Ollama = "ollama" // POST {url}/api/embed {"model", "input": [...], "truncate": true}
)

// Defaults for the zero values of Options.
const (
	DefaultOpenAIURL     = "https://api.openai.com/v1"
	DefaultOllamaURL     = "http://localhost:11434"
	DefaultBatchSize     = 64
	DefaultConcurrency   = 2
	DefaultMaxRetries    = 5
	DefaultTimeout       = 60 * time.Second
	DefaultQueryTimeout  = 20 * time.Second
	DefaultMaxInputBytes = 8 << 10
	// MaxRetryWait caps one wait between attempts, a Retry-After's included.
	MaxRetryWait = time.Minute
)

// maxResponseBytes bounds one answer's body whatever its batch: a batch of
// 2,048 vectors of 4,096 dimensions written as JSON is under 200 MB.
const maxResponseBytes = 256 << 20

// Bounds of one answer, from its batch: a vector takes at most
// maxCoordBytes per coordinate (pretty-printed JSON included) and
// maxVectorOverhead besides; the dimension probe in New, whose length is
// not known yet, may answer up to MaxDimensions.
const (
	maxCoordBytes     = 64
	maxVectorOverhead = 1 << 10
	maxAnswerOverhead = 64 << 10
	// MaxDimensions is the longest vector the dimension probe accepts
	// (the longest of the common embedding models is 4,096). Every vector of
	// the index takes the probe's length, and the probe's answer is the
	// server's to choose: at 65,536 dimensions (256 KiB a vector) a hostile
	// or broken server took the daemon to 1.5 GB for 1,500 resources. A
	// longer model needs Options.Dimensions set.
	MaxDimensions = 1 << 13
)

// responseLimit is the largest answer a batch of n texts may get.
func (e *Embedder) responseLimit(n int) int64 {
	dim := e.dim
	if dim == 0 {
		dim = MaxDimensions
	}
	return min(maxResponseBytes, maxAnswerOverhead+int64(n)*(int64(dim)*maxCoordBytes+maxVectorOverhead))
}

// Errors an [Embedder] returns wrap one of these, so callers can tell a
// configuration to fix from a server to wait for.
var (
	// ErrUnauthorized: the server refused the API key (401 or 403).
	ErrUnauthorized = errors.New("embedder: unauthorized")
	// ErrNotFound: the URL or the model does not exist there (404).
	ErrNotFound = errors.New("embedder: not found")
	// ErrRejected: the server refused the request for another reason (a
	// 4xx other than 408, 409 and 429).
	ErrRejected = errors.New("embedder: request rejected")
	// ErrUnavailable: the server kept answering 429 or 5xx, or could not
	// be reached, through every retry.
	ErrUnavailable = errors.New("embedder: unavailable")
	// ErrBadResponse: the answer was not what the API promises: not JSON,
	// another number of vectors than inputs, a vector of another
	// dimension, a NaN, an infinity or the zero vector.
	ErrBadResponse = errors.New("embedder: bad response")
)

// Options configures [New].
type Options struct {
	// Provider is OpenAI or Ollama. Required.
	Provider string
	// URL is the API's base URL: for OpenAI, the one ending in /v1 (a URL
	// that already ends in /embeddings is used as it is); for Ollama, the
	// server's root. Empty means DefaultOpenAIURL or DefaultOllamaURL.
	URL string
	// Model is the embedding model's name, e.g. "text-embedding-3-small"
	// or "nomic-embed-text". Required.
	Model string
	// Dimensions is the vector length. For OpenAI it is also sent as the
	// "dimensions" parameter (models that can shorten their output do);
	// for Ollama, too (servers that cannot shorten then answer with their
	// model's length, and every answer of another length is an error).
	// Zero means: ask the server once, at New, and use what it returns.
	Dimensions int
	// APIKey is sent as "Authorization: Bearer APIKey". Empty sends none.
	APIKey string
	// BatchSize is how many texts one request carries. Zero means
	// DefaultBatchSize.
	BatchSize int
	// Concurrency is how many requests may be in flight at once, queries
	// included. Zero means DefaultConcurrency.
	Concurrency int
	// MaxRetries is how many times a request is retried after a 429, a
	// 5xx, a timeout or a network error. Zero means DefaultMaxRetries;
	// negative, none.
	MaxRetries int
	// Timeout bounds one request (each attempt). Zero means DefaultTimeout.
	Timeout time.Duration
	// QueryTimeout bounds Embed (a query's vector) as a whole, retries and
	// their waits included, so that a server that accepts connections and
	// never answers cannot hold a Search for every attempt's Timeout.
	// Zero means DefaultQueryTimeout; it is never more than the attempts
	// would take.
	QueryTimeout time.Duration
	// MaxInputBytes cuts each text to at most this many bytes (at a
	// character boundary) before it is sent, so that a long description
	// does not exceed the model's context. Zero means
	// DefaultMaxInputBytes; negative, no cut.
	MaxInputBytes int
	// MinBackoff is the first retry's wait before jitter; each later one
	// doubles it, up to MaxRetryWait. Zero means 500 ms.
	MinBackoff time.Duration
	// HTTPClient sends the requests. Nil means a client with no timeout of
	// its own (Timeout bounds each attempt).
	HTTPClient *http.Client
	// Logger receives a debug record per retry. Nil discards.
	Logger *slog.Logger
}

// An Embedder embeds text through a remote API. It is safe for concurrent
// use.
type Embedder struct {
	provider, endpoint, model, key string
	dim                            int
	sendDim                        bool
	batch                          int
	retries                        int
	timeout, queryTimeout          time.Duration
	maxInput                       int
	minBackoff                     time.Duration
	client                         *http.Client
	log                            *slog.Logger
	red                            *redact.Redactor
	sem                            chan struct{}
	// sleep waits d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns an Embedder for opts. It checks the options; when
// opts.Dimensions is zero it also embeds one short text to learn the
// dimension, so an unreachable server, a wrong key or an unknown model is
// reported here rather than at the first sync.
func New(ctx context.Context, opts Options) (*Embedder, error) {
	e := &Embedder{
		provider:     opts.Provider,
		model:        opts.Model,
		key:          opts.APIKey,
		dim:          opts.Dimensions,
		sendDim:      opts.Dimensions > 0,
		batch:        cmp.Or(opts.BatchSize, DefaultBatchSize),
		retries:      cmp.Or(opts.MaxRetries, DefaultMaxRetries),
		timeout:      cmp.Or(opts.Timeout, DefaultTimeout),
		queryTimeout: cmp.Or(opts.QueryTimeout, DefaultQueryTimeout),
		maxInput:     cmp.Or(opts.MaxInputBytes, DefaultMaxInputBytes),
		minBackoff:   cmp.Or(opts.MinBackoff, 500*time.Millisecond),
		client:       opts.HTTPClient,
		log:          opts.Logger,
		sem:          make(chan struct{}, max(1, cmp.Or(opts.Concurrency, DefaultConcurrency))),
		sleep:        sleepCtx,
	}
	if e.client == nil {
		// net/http keeps Authorization on a redirect to the same host name
		// whatever the scheme and port (https → http, another local port)
		// and to its subdomains: the key goes only to the endpoint's own
		// origin. It also sends the URL redirected from, query included
		// (where a key may be), as Referer: never.
		e.client = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 10 {
				return errors.New("stopped after 10 redirects")
			}
			req.Header.Del("Referer")
			if o := via[0].URL; e.key != "" && (req.URL.Scheme != o.Scheme || req.URL.Host != o.Host) {
				return fmt.Errorf("redirected to %s, another origin: not sending the API key there", redact.URL(req.URL.String()))
			}
			return nil
		}}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	var base, path string
	switch opts.Provider {
	case OpenAI:
		base, path = cmp.Or(opts.URL, DefaultOpenAIURL), "/embeddings"
	case Ollama:
		base, path = cmp.Or(opts.URL, DefaultOllamaURL), "/api/embed"
	default:
		return nil, fmt.Errorf("embedder: provider %q is not %q or %q", opts.Provider, OpenAI, Ollama)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embedder: url %q is not an http(s) URL", redact.URL(base))
	}
	// The base URL's path gets the API's (an Ollama URL ending in /api is
	// its root's), unless it already ends in it.
	p := strings.TrimRight(u.Path, "/")
	if opts.Provider == Ollama {
		p = strings.TrimSuffix(strings.TrimSuffix(p, path), "/api")
	}
	u.Path, u.RawPath = strings.TrimSuffix(p, path)+path, ""
	e.endpoint = u.String()
	secrets := []string{opts.APIKey}
	if u.User != nil {
		secrets = append(secrets, u.User.String())
		if p, ok := u.User.Password(); ok {
			secrets = append(secrets, p)
		}
	}
	for _, vs := range u.Query() {
		secrets = append(secrets, vs...)
	}
	e.red = redact.New(secrets...)
	switch {
	case strings.TrimSpace(opts.Model) == "":
		return nil, errors.New("embedder: model is required")
	case opts.Dimensions < 0:
		return nil, fmt.Errorf("embedder: dimensions %d is negative", opts.Dimensions)
	case opts.BatchSize < 0:
		return nil, fmt.Errorf("embedder: batch_size %d is negative", opts.BatchSize)
	case opts.Concurrency < 0:
		return nil, fmt.Errorf("embedder: concurrency %d is negative", opts.Concurrency)
	case opts.Timeout < 0:
		return nil, fmt.Errorf("embedder: timeout %v is negative", opts.Timeout)
	case opts.QueryTimeout < 0:
		return nil, fmt.Errorf("embedder: query timeout %v is negative", opts.QueryTimeout)
	}
	if e.dim == 0 {
		vecs, err := e.EmbedBatch(ctx, []string{"contextd dimension probe"})
		if err != nil {
			return nil, fmt.Errorf("learning the dimension (set dimensions to skip this): %w", err)
		}
		e.dim = len(vecs[0])
	}
	return e, nil
}

// Name returns the embedder's identity: "PROVIDER:MODEL:dDIM:l2", e.g.
// "openai:text-embedding-3-small:d512:l2". It changes when the provider,
// the model, the dimension or the normalisation does.
func (e *Embedder) Name() string {
	return fmt.Sprintf("%s:%s:d%d:l2", e.provider, e.model, e.dim)
}

// Dim returns the vector length.
func (e *Embedder) Dim() int { return e.dim }

// Embed returns text's unit vector (a query's: it takes at most
// Options.QueryTimeout). Errors wrap one of the package's sentinels, or
// ctx's error.
func (e *Embedder) Embed(ctx context.Context, text string) ([]float32, error) {
	ctx, cancel := context.WithTimeout(ctx, e.queryTimeout)
	defer cancel()
	vecs, err := e.EmbedBatch(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// EmbedBatch returns the unit vectors of texts, in order. It sends batches
// of BatchSize texts, up to Concurrency at once, and fails as a whole when
// one batch fails (after its retries): it then cancels the others. Its
// errors have the embedder's credentials masked whole (see
// redact.Redactor.StringWhole): a service quoting its input back quotes a
// caller's query, and masking pieces there would tell the caller which of
// its guesses begin the API key. (Callers are not shown these errors for
// their queries: see engine's queryEmbedError.)
func (e *Embedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	if len(texts) <= e.batch {
		if len(texts) == 0 {
			return out, nil
		}
		if err := e.send(ctx, texts, out); err != nil {
			return out, e.red.ErrorWhole(err)
		}
		return out, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for lo := 0; lo < len(texts); lo += e.batch {
		hi := min(len(texts), lo+e.batch)
		wg.Go(func() {
			if err := e.send(ctx, texts[lo:hi], out[lo:hi]); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, e.red.ErrorWhole(err)
	}
	return out, nil
}

// send embeds one batch into out, retrying what may pass on a retry. It
// holds a concurrency slot for each attempt, not while it waits to retry.
func (e *Embedder) send(ctx context.Context, texts []string, out [][]float32) error {
	body, err := e.request(texts)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		select {
		case e.sem <- struct{}{}:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		wait, err := e.attempt(ctx, body, out)
		<-e.sem
		if err == nil {
			return nil
		}
		if wait < 0 || ctx.Err() != nil {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return err
		}
		if e.retries < 0 || attempt >= e.retries {
			return fmt.Errorf("%w: %d attempts: %w", ErrUnavailable, attempt+1, err)
		}
		backoff := min(MaxRetryWait, e.minBackoff<<min(attempt, 20))
		d := backoff/2 + rand.N(backoff/2+1) // equal jitter
		if wait > 0 {
			d = min(MaxRetryWait, wait) + rand.N(min(MaxRetryWait, wait)/10+1)
		}
		e.log.Debug("embedding request failed; retrying", "err", e.red.String(err.Error()), "attempt", attempt+1, "wait", d)
		if err := e.sleep(ctx, d); err != nil {
			return context.Cause(ctx)
		}
	}
}

// request is the JSON body of one batch's request.
func (e *Embedder) request(texts []string) ([]byte, error) {
	in := make([]string, len(texts))
	for i, t := range texts {
		if e.maxInput > 0 && len(t) > e.maxInput {
			t = cutUTF8(t, e.maxInput)
		}
		if strings.TrimSpace(t) == "" {
			t = " " // OpenAI refuses empty inputs; a space embeds as nothing does
		}
		in[i] = t
	}
	req := map[string]any{"model": e.model, "input": in}
	switch e.provider {
	case OpenAI:
		req["encoding_format"] = "float"
	case Ollama:
		req["truncate"] = true
	}
	if e.sendDim {
		req["dimensions"] = e.dim
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("embedder: encode request: %v", err)
	}
	return b, nil
}

// attempt sends one request. On failure, wait says what may follow: < 0
// never retry, 0 retry after the backoff, > 0 retry after at least wait
// (the server's Retry-After).
func (e *Embedder) attempt(ctx context.Context, body []byte, out [][]float32) (wait time.Duration, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("embedder: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		// Network errors and this attempt's timeout may pass; the
		// caller's cancellation ends the loop in send.
		return 0, fmt.Errorf("embedder: POST %s: %s", e.endpoint, e.transportError(err))
	}
	defer resp.Body.Close()
	limit := e.responseLimit(len(out))
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return 0, fmt.Errorf("embedder: POST %s: reading the answer: %v", e.endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return e.statusError(resp, data)
	}
	if int64(len(data)) > limit {
		return -1, fmt.Errorf("%w: the answer is over %d bytes, the most %d inputs can take", ErrBadResponse, limit, len(out))
	}
	if err := e.decode(data, out); err != nil {
		return -1, err
	}
	return 0, nil
}

// statusError classifies a non-200 answer. The error names the status
// code, not the service's words (its reason phrase, its message), which
// may quote a caller's query sent earlier: they are logged, masked.
func (e *Embedder) statusError(resp *http.Response, body []byte) (time.Duration, error) {
	code := resp.StatusCode
	said := ""
	if msg := serverMessage(body); msg != "" || statusLine(resp.Status) != fmt.Sprintf("%d %s", code, http.StatusText(code)) {
		e.log.Warn("the embedder answered an error", "status", e.red.String(statusLine(resp.Status)), "message", e.red.String(msg))
		said = " (its message is in the log)"
	}
	endpoint, status := e.endpoint, fmt.Sprintf("HTTP %d", code)
	switch {
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code == http.StatusConflict || code >= 500:
		return retryAfter(resp.Header), fmt.Errorf("embedder: POST %s: %s%s", endpoint, status, said)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return -1, fmt.Errorf("%w: POST %s: %s: check api_key%s", ErrUnauthorized, endpoint, status, said)
	case code == http.StatusNotFound:
		return -1, fmt.Errorf("%w: POST %s: %s: check url and that model %q is served there%s", ErrNotFound, endpoint, status, e.model, said)
	}
	return -1, fmt.Errorf("%w: POST %s: %s%s", ErrRejected, endpoint, status, said)
}

// maxStatusBytes bounds what an error quotes of a status line: its reason
// phrase is the server's to choose (Go reads up to 10 MB of it with the
// headers), and the error is logged at every retry and returned to callers.
const maxStatusBytes = 100

// maxTransportError bounds what an error quotes of a transport error:
// net/http quotes a malformed status line or header whole.
const maxTransportError = 512

// statusLine returns the status ("429 Too Many Requests") cut to
// maxStatusBytes, control characters replaced by spaces.
func statusLine(s string) string { return cutLine(s, maxStatusBytes) }

// cutLine returns s cut to n bytes, control characters replaced by spaces.
func cutLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return redact.Clip(s, n)
}

// serverMessage extracts the error message of an error answer (OpenAI's
// {"error": {"message": …}}, Ollama's {"error": "…"}), or a line of its
// text, at most 300 bytes.
func serverMessage(body []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	msg := ""
	if json.Unmarshal(body, &v) == nil && len(v.Error) > 0 {
		var s string
		var o struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(v.Error, &s) == nil:
			msg = s
		case json.Unmarshal(v.Error, &o) == nil:
			msg = o.Message
		}
	}
	if msg == "" {
		msg, _, _ = strings.Cut(strings.TrimSpace(string(body)), "\n")
	}
	msg = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, msg)
	return redact.Clip(msg, 300)
}

// retryAfter reads Retry-After (seconds or an HTTP date) or OpenAI's
// retry-after-ms; 0 when neither is usable.
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e9 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e6 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// decode checks an answer and writes its normalised vectors into out.
func (e *Embedder) decode(data []byte, out [][]float32) error {
	var vecs [][]float32
	switch e.provider {
	case OpenAI:
		items, err := decodeList(data, "data", len(out))
		if err != nil {
			return e.listError(err, "not the embeddings API's JSON", len(out))
		}
		if len(items) != len(out) {
			return fmt.Errorf("%w: %d embeddings for %d inputs", ErrBadResponse, len(items), len(out))
		}
		vecs = make([][]float32, len(out))
		for i, item := range items {
			var d struct {
				Index     *int      `json:"index"`
				Embedding []float32 `json:"embedding"`
			}
			if err := json.Unmarshal(item, &d); err != nil {
				return fmt.Errorf("%w: not the embeddings API's JSON: %v", ErrBadResponse, err)
			}
			j := i
			if d.Index != nil {
				j = *d.Index
			}
			if j < 0 || j >= len(out) || vecs[j] != nil {
				return fmt.Errorf("%w: embedding index %d is out of range or repeated (%d inputs)", ErrBadResponse, j, len(out))
			}
			if d.Embedding == nil {
				d.Embedding = []float32{}
			}
			vecs[j] = d.Embedding
		}
	case Ollama:
		items, err := decodeList(data, "embeddings", len(out))
		if err != nil {
			return e.listError(err, "not Ollama's /api/embed JSON", len(out))
		}
		if len(items) != len(out) {
			return fmt.Errorf("%w: %d embeddings for %d inputs", ErrBadResponse, len(items), len(out))
		}
		vecs = make([][]float32, len(out))
		for i, item := range items {
			if err := json.Unmarshal(item, &vecs[i]); err != nil {
				return fmt.Errorf("%w: not Ollama's /api/embed JSON: %v", ErrBadResponse, err)
			}
		}
	}
	if e.dim == 0 && len(vecs[0]) > MaxDimensions {
		return fmt.Errorf("%w: a vector of %d dimensions, over the %d the probe accepts (set dimensions for a longer one)", ErrBadResponse, len(vecs[0]), MaxDimensions)
	}
	want := e.dim
	if want == 0 {
		want = len(vecs[0]) // the probe in New
	}
	for i, v := range vecs {
		if len(v) != want {
			hint := ""
			if e.sendDim {
				hint = " (the model may not shorten its vectors: set dimensions to its length or leave it out)"
			}
			return fmt.Errorf("%w: input %d: a vector of %d dimensions, want %d%s", ErrBadResponse, i, len(v), want, hint)
		}
		if err := normalise(v); err != nil {
			return fmt.Errorf("%w: input %d: %v", ErrBadResponse, i, err)
		}
	}
	copy(out, vecs)
	return nil
}

// errTooMany: an answer lists more embeddings than its batch has inputs.
var errTooMany = errors.New("too many embeddings")

// listError describes decodeList's error.
func (e *Embedder) listError(err error, what string, n int) error {
	if errors.Is(err, errTooMany) {
		return fmt.Errorf("%w: over %d embeddings for %d inputs", ErrBadResponse, n, n)
	}
	return fmt.Errorf("%w: %s: %v", ErrBadResponse, what, err)
}

// decodeList returns the elements of the array under key (matched as
// encoding/json matches a field: the last one, case-insensitively) in
// data's top-level object, undecoded. It stops at the (limit+1)th element
// with errTooMany, so that an answer of millions of tiny elements costs no
// more than its bytes.
func decodeList(data []byte, key string, limit int) ([]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil {
		return nil, err
	} else if t != json.Delim('{') {
		return nil, errors.New("the answer is not a JSON object")
	}
	var list []json.RawMessage
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if k, _ := t.(string); !strings.EqualFold(k, key) {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		list = list[:0]
		if t, err = dec.Token(); err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		if t != json.Delim('[') {
			return nil, fmt.Errorf("%q is not an array", key)
		}
		for dec.More() {
			if len(list) == limit {
				return nil, errTooMany
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, err
			}
			list = append(list, raw)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON answer")
	}
	return list, nil
}

// normalise scales v to unit length in place. It fails on a NaN or an
// infinity, and on the zero vector (which has no direction).
func normalise(v []float32) error {
	var n float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("a coordinate is not a finite number")
		}
		n += f * f
	}
	if n == 0 || math.IsInf(n, 0) {
		return errors.New("the zero vector")
	}
	s := 1 / math.Sqrt(n)
	for i, x := range v {
		v[i] = float32(float64(x) * s)
	}
	return nil
}

// cutUTF8 returns s's longest prefix of at most n bytes that ends at a
// character boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// unwrapURLError drops *url.Error's "Post \"URL\": " prefix, which the
// caller's message already carries.
// transportError returns what an error says of a failed request: a
// network error (a refused or reset connection, a DNS failure, a time-out)
// as Go words it, which quotes only the address; anything else (an answer
// net/http could not parse, which it quotes: the service's bytes) as a
// malformed answer, logged, masked.
func (e *Embedder) transportError(err error) string {
	var ne net.Error
	if inner := unwrapURLError(err); errors.As(inner, &ne) || strings.HasPrefix(inner.Error(), "timed out: ") {
		return cutLine(inner.Error(), maxTransportError)
	}
	e.log.Warn("the embedder's answer could not be read", "err", e.red.String(cutLine(unwrapURLError(err).Error(), maxTransportError)))
	return "the answer could not be read as HTTP (what it said is in the log)"
}

func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("timed out: %v", ue.Err)
		}
		return ue.Err
	}
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
