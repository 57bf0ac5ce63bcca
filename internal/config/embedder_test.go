package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/config"
)

func TestRemoteEmbedder(t *testing.T) {
	const file = `
embedder:
  provider: openai
  url: https://gateway.example/v1
  model: text-embedding-3-small
  dimensions: 512
  api_key: ${OPENAI_API_KEY}
  batch_size: 128
  concurrency: 4
  max_retries: 0
  timeout: 20s
  max_input_bytes: 4096
`
	c, err := config.Parse("c.yaml", []byte(file), env(map[string]string{"OPENAI_API_KEY": "sk-test-123456"}))
	if err != nil {
		t.Fatal(err)
	}
	want := &config.RemoteEmbedder{Provider: "openai", URL: "https://gateway.example/v1", Model: "text-embedding-3-small",
		Dimensions: 512, APIKey: "sk-test-123456", BatchSize: 128, Concurrency: 4, MaxRetries: -1, Timeout: 20 * time.Second, MaxInputBytes: 4096}
	if diff := cmp.Diff(want, c.RemoteEmbedder); diff != "" {
		t.Errorf("remote embedder (-want +got):\n%s", diff)
	}
	if c.Embedder != config.EmbedderOpenAI {
		t.Errorf("Embedder = %q, want openai", c.Embedder)
	}
	if s := c.EmbedderSecrets(); len(s) == 0 || s[0] != "sk-test-123456" {
		t.Errorf("EmbedderSecrets = %q, want the API key", s)
	}

	c, err = config.Parse("c.json", []byte(`{"embedder": {"provider": "ollama", "model": "nomic-embed-text"}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.RemoteEmbedder; r == nil || r.Provider != "ollama" || r.Model != "nomic-embed-text" || r.URL != "" || r.MaxRetries != 0 {
		t.Errorf("ollama embedder = %+v", r)
	}
	for _, name := range []string{"", "glove", "use-lite"} {
		src := "embedder: " + name + "\n"
		c, err := config.Parse("c.yaml", []byte(src), env(nil))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if c.RemoteEmbedder != nil || c.Embedder != map[string]string{"": config.DefaultEmbedder}[name]+name || c.EmbedderSecrets() != nil {
			t.Errorf("%q: Embedder %q, remote %+v", src, c.Embedder, c.RemoteEmbedder)
		}
	}
}

func TestRemoteEmbedderErrors(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"embedder: openai\n", `c.yaml: invalid config: field embedder: "openai" needs a model`},
		{"embedder: bert\n", `field embedder: "bert" is not "use-lite", "glove" or a mapping`},
		{"embedder: [a]\n", `field embedder: want a name or a mapping`},
		{"embedder: {provider: cohere, model: m}\n", `field embedder.provider: "cohere" is not "openai" or "ollama"`},
		{"embedder: {provider: glove}\n", `"glove" is built in`},
		{"embedder: {provider: ollama}\n", `field embedder.model: required`},
		{"embedder: {provider: ollama, model: m, dimensions: -3}\n", `field embedder.dimensions: -3 is negative`},
		{"embedder: {provider: ollama, model: m, batch_size: 5000}\n", `field embedder.batch_size: 5000`},
		{"embedder: {provider: ollama, model: m, concurrency: -1}\n", `field embedder.concurrency: -1`},
		{"embedder: {provider: ollama, model: m, max_retries: -1}\n", `field embedder.max_retries: -1 is negative`},
		{"embedder: {provider: ollama, model: m, timeout: soon}\n", `field embedder.timeout: "soon"`},
		{"embedder: {provider: ollama, model: m, url: 'ftp://user:pw0rd@h/?k=v'}\n", `field embedder.url: "ftp://…@h/…" is not an http(s) URL`},
		{"embedder: {provider: openai, model: m, api_key: '${NO_SUCH_KEY}'}\n", `environment variable NO_SUCH_KEY is not set (used in field embedder.api_key)`},
		{"embedder: {provider: openai, model: m, apikey: x}\n", `field embedder.apikey is not one contextd reads; did you mean "api_key"?`},
		{"embedder: {provider: openai, model: m, dimension: 5}\n", `field embedder.dimension is not one contextd reads; did you mean "dimensions"?`},
	} {
		_, err := config.Parse("c.yaml", []byte(tt.file), env(nil))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: err = %v, want %q", tt.file, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "pw0rd") {
			t.Errorf("%q: error shows the URL's password: %v", tt.file, err)
		}
	}
}
