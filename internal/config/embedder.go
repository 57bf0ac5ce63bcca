package config

import (
	"fmt"
	"net/url"
	"time"

	"go.yaml.in/yaml/v3"
)

// Remote embedder providers (the embedder key's provider field).
const (
	EmbedderOpenAI = "openai" // an OpenAI-compatible POST {url}/embeddings
	EmbedderOllama = "ollama" // Ollama's POST {url}/api/embed
)

// RemoteEmbedder configures an embedding server the user runs, given as a
// mapping under the embedder key:
//
//	embedder:
//	  provider: openai            # or ollama
//	  url: https://api.openai.com/v1
//	  model: text-embedding-3-small
//	  dimensions: 512
//	  api_key: ${OPENAI_API_KEY}
//
// Zero values mean the defaults of internal/embed/remote.
type RemoteEmbedder struct {
	Provider      string // EmbedderOpenAI or EmbedderOllama
	URL           string // the API's base URL; "" is the provider's default
	Model         string // required
	Dimensions    int    // 0: learned from the server at start
	APIKey        string // sent as a bearer token; masked in errors and logs
	BatchSize     int    // texts per request
	Concurrency   int    // requests in flight at once
	MaxRetries    int    // retries after 429, 5xx, timeouts; -1 for none
	Timeout       time.Duration
	MaxInputBytes int // each text is cut to this many bytes before it is sent
}

// embedderFile is the on-disk shape of a remote embedder.
type embedderFile struct {
	Provider      string `yaml:"provider"`
	URL           string `yaml:"url"`
	Model         string `yaml:"model"`
	Dimensions    int    `yaml:"dimensions"`
	APIKey        string `yaml:"api_key"`
	BatchSize     int    `yaml:"batch_size"`
	Concurrency   int    `yaml:"concurrency"`
	MaxRetries    *int   `yaml:"max_retries"`
	Timeout       string `yaml:"timeout"`
	MaxInputBytes int    `yaml:"max_input_bytes"`
}

// parseEmbedder reads the embedder key: a built-in's name, or a mapping
// that configures a remote embedder. It sets c.Embedder (the built-in's
// name or the provider) and c.RemoteEmbedder.
func (c *Config) parseEmbedder(n *yaml.Node, lookup func(string) (string, bool)) error {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil || n.Kind == 0 || n.ShortTag() == "!!null" {
		c.Embedder = DefaultEmbedder
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Value {
		case "":
			c.Embedder = DefaultEmbedder
		case EmbedderUSELite, EmbedderGloVe:
			c.Embedder = n.Value
		case EmbedderOpenAI, EmbedderOllama:
			return fmt.Errorf("field embedder: %q needs a model: write embedder: {provider: %s, model: NAME, …}", n.Value, n.Value)
		default:
			return fmt.Errorf("field embedder: %q is not %q, %q or a mapping with provider %q or %q", n.Value, EmbedderUSELite, EmbedderGloVe, EmbedderOpenAI, EmbedderOllama)
		}
		return nil
	case yaml.MappingNode:
	default:
		return fmt.Errorf("line %d: field embedder: want a name or a mapping", n.Line)
	}
	var f embedderFile
	if err := n.Decode(&f); err != nil {
		return fmt.Errorf("field embedder: %v", typeError(err))
	}
	ex := expander{lookup: lookup}
	r := &RemoteEmbedder{
		Provider:      f.Provider,
		URL:           ex.str("embedder.url", f.URL),
		Model:         ex.str("embedder.model", f.Model),
		APIKey:        ex.str("embedder.api_key", f.APIKey),
		Dimensions:    f.Dimensions,
		BatchSize:     f.BatchSize,
		Concurrency:   f.Concurrency,
		MaxInputBytes: f.MaxInputBytes,
	}
	if ex.err != nil {
		return ex.err
	}
	switch {
	case r.Provider == EmbedderUSELite || r.Provider == EmbedderGloVe:
		return fmt.Errorf("field embedder.provider: %q is built in: write embedder: %s", r.Provider, r.Provider)
	case r.Provider != EmbedderOpenAI && r.Provider != EmbedderOllama:
		return fmt.Errorf("field embedder.provider: %q is not %q or %q", r.Provider, EmbedderOpenAI, EmbedderOllama)
	case r.Model == "":
		return fmt.Errorf("field embedder.model: required (e.g. text-embedding-3-small, nomic-embed-text)")
	case r.Dimensions < 0:
		return fmt.Errorf("field embedder.dimensions: %d is negative", r.Dimensions)
	case r.BatchSize < 0 || r.BatchSize > 2048:
		return fmt.Errorf("field embedder.batch_size: %d is not between 1 and 2048", r.BatchSize)
	case r.Concurrency < 0 || r.Concurrency > 64:
		return fmt.Errorf("field embedder.concurrency: %d is not between 1 and 64", r.Concurrency)
	case r.MaxInputBytes < 0:
		return fmt.Errorf("field embedder.max_input_bytes: %d is negative", r.MaxInputBytes)
	}
	if r.URL != "" {
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || !validPort(u.Port()) {
			return fmt.Errorf("field embedder.url: %q is not an http(s) URL", urlShown(r.URL))
		}
	}
	if f.MaxRetries != nil {
		switch m := *f.MaxRetries; {
		case m < 0:
			return fmt.Errorf("field embedder.max_retries: %d is negative (0 means none)", m)
		case m == 0:
			r.MaxRetries = -1
		default:
			r.MaxRetries = m
		}
	}
	if f.Timeout != "" {
		d, err := time.ParseDuration(f.Timeout)
		if err != nil || d <= 0 {
			return fmt.Errorf("field embedder.timeout: %q is not a positive duration like 30s", f.Timeout)
		}
		r.Timeout = d
	}
	c.Embedder, c.RemoteEmbedder = r.Provider, r
	return nil
}

// EmbedderSecrets returns the remote embedder's credentials (its API key
// and its URL's user info and query values), for masking in errors and
// logs; none for a built-in embedder.
func (c *Config) EmbedderSecrets() []string {
	if c.RemoteEmbedder == nil {
		return nil
	}
	return append([]string{c.RemoteEmbedder.APIKey}, urlSecrets(c.RemoteEmbedder.URL)...)
}
