package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// A client needs listen and auth only: a server's unset variable, which
// fails the daemon, must not stop it, while its own settings are still
// checked.
func TestParseClientIgnoresTheServersButNotAuth(t *testing.T) {
	const file = `
listen: unix:///run/contextd/c.sock
auth: { token: "${CTX_TOKEN}" }
mcpServers:
  docs:
    url: https://docs.example.internal/mcp
    headers: { Authorization: "Bearer ${DOCS_TOKEN}" }
  broken: { type: carrier-pigeon }
`
	vars := env(map[string]string{"CTX_TOKEN": "0123456789abcdef0123"})
	if _, err := config.Parse("c.yaml", []byte(file), vars); err == nil || !strings.Contains(err.Error(), `server "`) {
		t.Fatalf("the daemon's Parse: %v, want a server's error", err)
	}
	c, err := config.ParseClient("c.yaml", []byte(file), vars)
	if err != nil {
		t.Fatalf("ParseClient: %v", err)
	}
	if c.Listen != "unix:///run/contextd/c.sock" || c.Auth.Token != "0123456789abcdef0123" || c.Servers != nil {
		t.Errorf("ParseClient: listen %q, token %q, servers %v", c.Listen, c.Auth.Token, c.Servers)
	}
	// The token's own variable is the client's business.
	_, err = config.ParseClient("c.yaml", []byte(file), env(nil))
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "environment variable CTX_TOKEN is not set (used in field auth.token)") {
		t.Errorf("ParseClient without the token's variable: %v", err)
	}
	// So are a bad listen-side setting and a misspelt key.
	if _, err := config.ParseClient("c.yaml", []byte("lisen: 127.0.0.1:1\n"), env(nil)); err == nil || !strings.Contains(err.Error(), `did you mean "listen"`) {
		t.Errorf("ParseClient with a misspelt listen: %v", err)
	}
}

// A file the daemon refuses at a reload for a key only it reads (a
// misspelt server field or top-level key) still tells its clients where
// the daemon is, so that contextd servers can say why it was refused.
func TestParseClientReadsAFileTheDaemonRefuses(t *testing.T) {
	const file = `
listen: 127.0.0.1:17999
poll_intervl: 5m
embedder: {provider: openai, url: "https://x.example/v1", model: m, api_key: "${UNSET_KEY}"}
mcpServers:
  docs: { comand: node }
`
	if _, err := config.Parse("c.yaml", []byte(file), env(nil)); err == nil {
		t.Fatal("the daemon's Parse accepted the file")
	}
	c, err := config.ParseClient("c.yaml", []byte(file), env(nil))
	if err != nil {
		t.Fatalf("ParseClient: %v", err)
	}
	if c.Listen != "127.0.0.1:17999" {
		t.Errorf("listen = %q", c.Listen)
	}
	if w := strings.Join(c.Warnings, "\n"); !strings.Contains(w, `did you mean "poll_interval"`) {
		t.Errorf("warnings %q do not name the misspelt key", w)
	}
	// Keys inside auth and tls stay errors: a misspelt one would send no token.
	if _, err := config.ParseClient("c.yaml", []byte("auth: {tokn: x}\n"), env(nil)); err == nil {
		t.Error("ParseClient accepted a misspelt auth key")
	}
}
