package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// A JSON host file that repeats a key is read as JSON.parse reads it, the
// last one kept, with a warning naming both lines; it was refused. YAML
// has no such rule: a YAML file repeating a key is still refused.
func TestARepeatedKeyInAJSONFileKeepsTheLast(t *testing.T) {
	file := `{
  "mcpServers": {
    "notes": {"command": "old-notes"},
    "web": {
      "url": "https://a.example.com/mcp",
      "headers": {"X-Team": "one", "X-Team": "two"},
      "url": "https://b.example.com/mcp"
    },
    "notes": {
      "command": "notes-server",
      "args": ["--root", "/srv/notes"]
    }
  },
  "inputs": [{"id": "a", "id": "b"}],
  "mcpServers_note": 1
}
`
	lookup := func(string) (string, bool) { return "", false }
	c, err := config.Parse("mcp.json", []byte(file), lookup)
	if err != nil {
		t.Fatalf("a JSON file repeating keys: %v", err)
	}
	web, _ := c.Server("web")
	notes, _ := c.Server("notes")
	if len(c.Servers) != 2 || notes.Command != "notes-server" || web.URL != "https://b.example.com/mcp" || web.Headers["X-Team"] != "two" {
		t.Fatalf("servers %+v; want the last of each repeated key", c.Servers)
	}
	for _, want := range []string{
		`line 3: key "notes" is repeated: the one at line 9 is used`,
		`line 5: key "url" is repeated: the one at line 7 is used`,
		`line 6: key "X-Team" is repeated: the one at line 6 is used`,
		`line 14: key "id" is repeated: the one at line 14 is used`,
	} {
		if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("warnings %q: none says %q", c.Warnings, want)
		}
	}
	// Later lines keep their numbers.
	if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, `line 15: key "mcpServers_note"`) }) {
		t.Errorf("warnings %q: want the unread key at line 15", c.Warnings)
	}

	yamlFile := "mcpServers:\n  notes: {command: a}\n  notes: {command: b}\n"
	if _, err := config.Parse("contextd.yaml", []byte(yamlFile), lookup); err == nil || !strings.Contains(err.Error(), "already defined") {
		t.Fatalf("a YAML file repeating a key: %v, want it refused", err)
	}
}

// An unquoted value starting with "!" or "*" (a password such as
// "!Pa55w0rd") is a tag or an alias to YAML: the value became "" without a
// word, or the error quoted it as an anchor's name. Either is refused,
// named by line (and key), the value never quoted.
func TestUnquotedTagsAndAliasesAreRefusedUnquoted(t *testing.T) {
	const secret = "Pa55w0rd-Zq9x"
	lookup := func(string) (string, bool) { return "", false }
	for _, c := range []struct{ file, want string }{
		{"mcpServers:\n  s:\n    url: https://x.example.com/mcp\n    headers:\n      X-Api-Key: !" + secret + "\n", `line 5: the value of key "X-Api-Key" starts with "!"`},
		{"mcpServers:\n  s:\n    command: srv\n    env:\n      API_KEY: !<" + secret + "> x\n", `line 5: the value of key "API_KEY" starts with "!"`},
		{"mcpServers:\n  s:\n    url: https://x.example.com/mcp\n    headers:\n      X-Api-Key: *" + secret + "\n", `line 5: a value starting with "*"`},
		{"mcpServers:\n  s:\n    url: https://x.example.com/mcp\n    headers:\n      X-Api-Key: &" + secret + "\n", `line 5: the value of key "X-Api-Key" starts with "&"`},
		{"mcpServers:\n  s:\n    command: srv\n    args: [--key, &" + secret + "]\n", `line 4: the value starts with "&"`},
		{"mcpServers:\n  s:\n    command: srv\n    env:\n      K: !!" + secret + "\n", `line 5: the value of key "K" starts with "!"`},
		{"mcpServers:\n  s:\n    command: srv\n    env:\n      K: !!binary " + secret + "\n", `line 5: the value of key "K" starts with "!"`},
		{"mcpServers:\n  s:\n    command: srv\n    env:\n      K: !!null " + secret + "\n", `line 5: the value of key "K" starts with "!"`},
	} {
		_, err := config.Parse("contextd.yaml", []byte(c.file), lookup)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("%q: %v; want an error with %q, the value unquoted", c.file, err, c.want)
		}
	}
	// Tags YAML defines, and anchors with their aliases, are read as ever.
	ok := "x-key: &k \"s3cr3t\"\nmcpServers:\n  s:\n    url: https://x.example.com/mcp\n    headers:\n      X-Api-Key: *k\n      X-Count: !!str 12\n"
	c, err := config.Parse("contextd.yaml", []byte(ok), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := c.Server("s"); s.Headers["X-Api-Key"] != "s3cr3t" || s.Headers["X-Count"] != "12" {
		t.Fatalf("headers %q", s.Headers)
	}
}

// LibreChat's websocket servers are skipped with a warning; the others in
// its file are read. A type nobody defines is still an error.
func TestAWebSocketServerIsSkippedNotTheFile(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	file := "mcpServers:\n  ws:\n    type: websocket\n    url: ws://localhost:8080/mcp\n  wss:\n    url: wss://mcp.example.com/ws\n  notes:\n    command: notes-server\n"
	c, err := config.Parse("librechat.yaml", []byte(file), lookup)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 1 || c.Servers[0].Name != "notes" {
		t.Fatalf("servers %+v, want notes alone", c.Servers)
	}
	if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, `server "ws": WebSocket is not`) }) ||
		!slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, `server "wss": WebSocket is not`) }) {
		t.Fatalf("warnings %q", c.Warnings)
	}
	if _, err := config.Parse("x.yaml", []byte("mcpServers:\n  s:\n    type: stdoi\n    command: x\n"), lookup); err == nil {
		t.Fatal("type stdoi was taken")
	}
}

// Continue's config.yaml lists its servers, each with a name: read as the
// mapping from name to server other hosts write.
func TestContinuesServerListIsRead(t *testing.T) {
	file := `name: My assistant
version: 0.0.1
schema: v1
models: []
mcpServers:
  - name: SQLite MCP
    command: npx
    args: ["-y", "mcp-sqlite", "/home/me/db.sqlite"]
    env: {}
  - name: web
    type: streamable-http
    url: https://mcp.example.com/mcp
`
	c, err := config.Parse("config.yaml", []byte(file), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	sq, ok1 := c.Server("SQLite MCP")
	web, ok2 := c.Server("web")
	if len(c.Servers) != 2 || !ok1 || !ok2 || sq.Command != "npx" || !slices.Equal(sq.Args, []string{"-y", "mcp-sqlite", "/home/me/db.sqlite"}) || web.URL != "https://mcp.example.com/mcp" || web.Transport != config.TransportHTTP {
		t.Fatalf("servers %+v", c.Servers)
	}
	// A key contextd does not read in a listed server is named at its line.
	bad := strings.Replace(file, "    env: {}", "    enviroment: {}", 1)
	c, err = config.Parse("config.yaml", []byte(bad), func(string) (string, bool) { return "", false })
	if err != nil || !slices.ContainsFunc(c.Warnings, func(w string) bool {
		return strings.Contains(w, `server "SQLite MCP": line 9: field "enviroment"`)
	}) {
		t.Fatalf("an unread key in a listed server: %v, warnings %q", err, c.Warnings)
	}
}

// A tls block that comes to nothing through an alias or a merge is refused
// as one written empty is: the daemon would serve plain text.
func TestAnEmptyTLSByAliasIsRefused(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	for _, file := range []string{
		"x-tls: &t {}\ntls: *t\nmcpServers: {}\n",
		"x-tls: &t {}\ntls: {<<: *t}\nmcpServers: {}\n",
	} {
		if _, err := config.Parse("contextd.yaml", []byte(file), lookup); err == nil || !strings.Contains(err.Error(), "field tls is empty") {
			t.Errorf("%q: %v; want it refused as empty", file, err)
		}
	}
}

// A key YAML finds twice is named in the error only when it looks like a
// name: a credential pasted as a key, twice, is not quoted.
func TestARepeatedCredentialKeyIsNotQuoted(t *testing.T) {
	const secret = "ghp_R4nd0mL00k1ngT0k3nV4lu3Xy9Zq8Wv7Ut6"
	file := "mcpServers:\n  s:\n    command: x\n    env:\n      " + secret + ": a\n      " + secret + ": b\n"
	_, err := config.Parse("contextd.yaml", []byte(file), func(string) (string, bool) { return "", false })
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "already defined") {
		t.Fatalf("%v; want the repeat refused, the key not quoted", err)
	}
	file = "mcpServers:\n  s:\n    command: x\n    env:\n      LOG_LEVEL: a\n      LOG_LEVEL: b\n"
	if _, err := config.Parse("contextd.yaml", []byte(file), func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), `mapping key "LOG_LEVEL" already defined`) {
		t.Fatalf("%v; want the repeated name quoted", err)
	}
}

// Cline's transportType, and transport, name the transport as type does.
func TestTransportTypeIsReadAsType(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	file := `{"mcpServers": {
  "old": {"transportType": "sse", "url": "https://a.example.com/sse"},
  "new": {"transportType": "streamableHttp", "url": "https://b.example.com/mcp"},
  "local": {"transport": "stdio", "command": "notes-server"}
}}`
	c, err := config.Parse("cline_mcp_settings.json", []byte(file), lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"old": config.TransportSSE, "new": config.TransportHTTP, "local": config.TransportStdio}
	for name, tr := range want {
		if s, _ := c.Server(name); s.Transport != tr {
			t.Errorf("server %s: transport %q, want %q", name, s.Transport, tr)
		}
	}
	if strings.Contains(strings.Join(c.Warnings, "\n"), "transportType") {
		t.Errorf("warnings %q", c.Warnings)
	}
	if _, err := config.Parse("x.json", []byte(`{"mcpServers": {"a": {"type": "http", "transportType": "sse", "url": "https://a.example.com"}}}`), lookup); err == nil {
		t.Error("type http with transportType sse was taken")
	}
	if _, err := config.Parse("x.json", []byte(`{"mcpServers": {"a": {"type": "http", "transportType": "streamableHttp", "url": "https://a.example.com"}}}`), lookup); err != nil {
		t.Errorf("type http with transportType streamableHttp (the same): %v", err)
	}
}
