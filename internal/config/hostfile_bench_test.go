package config_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// claudeJSON returns a Claude Code ~/.claude.json of about mb megabytes:
// the size comes, as in real ones, from the prompt history kept for every
// project, which contextd does not read.
func claudeJSON(tb testing.TB, mb int) []byte {
	tb.Helper()
	projects := map[string]any{}
	f := map[string]any{
		"numStartups":   44,
		"installMethod": "npm-global",
		"oauthAccount":  map[string]any{"emailAddress": "me@example.com", "organizationRole": "admin"},
		"mcpServers": map[string]any{
			"notes": map[string]any{"type": "stdio", "command": "notes-server", "args": []string{"--root", "/srv/notes"}},
			"web":   map[string]any{"type": "http", "url": "https://mcp.example.com/mcp"},
		},
		"projects": projects,
	}
	var history []any
	for i := range 100 {
		history = append(history, map[string]any{
			"display":        fmt.Sprintf("refactor the %d-th handler so that errors say what and where, then run the tests", i),
			"pastedContents": map[string]any{"1": map[string]any{"type": "text", "content": strings.Repeat("func handler() error { return nil }\n", 8)}},
		})
	}
	for i := 0; ; i++ {
		projects[fmt.Sprintf("/home/me/src/p%d", i)] = map[string]any{
			"allowedTools": []string{}, "history": history, "mcpServers": map[string]any{},
			"hasTrustDialogAccepted": true, "lastTotalInputTokens": 1234,
		}
		if i%20 == 19 {
			b, err := json.MarshalIndent(f, "", "  ")
			if err != nil {
				tb.Fatal(err)
			}
			if len(b) >= mb<<20 {
				return b
			}
		}
	}
}

// BenchmarkLoadLargeHostFile loads a 32 MB ~/.claude.json, as every
// `contextd mcp` a host starts on it does, and every reload.
func BenchmarkLoadLargeHostFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), ".claude.json")
	if err := os.WriteFile(path, claudeJSON(b, 32), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := config.LoadRegular(path)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Servers) != 2 {
			b.Fatalf("%d servers", len(c.Servers))
		}
	}
}

// A large host file is read as a small one is: the same servers, the key
// checks on what contextd does not read (a token written there is still
// refused), and errors at the file's own line numbers.
func TestALargeHostFileIsReadWhole(t *testing.T) {
	big := claudeJSON(t, 2)
	line := func(b []byte, key string) int {
		return bytes.Count(b[:bytes.Index(b, []byte(key))], []byte("\n")) + 1
	}
	c, err := config.Parse("claude.json", big, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 2 || c.Servers[0].Command != "notes-server" || c.Servers[1].URL != "https://mcp.example.com/mcp" {
		t.Fatalf("servers: %+v", c.Servers)
	}
	want := fmt.Sprintf("line %d: key \"projects\" is ignored", line(big, `"projects"`))
	if !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Fatalf("warnings %q, want one with %q", c.Warnings, want)
	}

	// A misspelt key after the bulk is named at its own line.
	odd := append(bytes.Clone(big[:bytes.LastIndex(big, []byte("}"))]), []byte(",\n  \"mcp_servers\": {}\n}\n")...)
	_, err = config.Parse("claude.json", odd, func(string) (string, bool) { return "", false })
	want = fmt.Sprintf("line %d: key \"mcp_servers\"", line(odd, `"mcp_servers"`))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("misspelt key after the bulk: %v, want %q", err, want)
	}

	// A token written in an unread key's object, beside bulk, is refused,
	// even in an "auth" object as large as the bulk.
	pad := strings.Repeat("x", 8<<10)
	for _, written := range []string{
		`"auth": {"token": "s3cr3t-daemon-token-0123456789", "pad": "` + pad + `"},`,
		`"bearer_token": "s3cr3t-daemon-token-0123456789",`,
	} {
		tok := bytes.Replace(big, []byte(`"projects": {`), []byte(`"projects": {`+written), 1)
		if _, err := config.Parse("claude.json", tok, func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), `key "projects"`) {
			t.Fatalf("%.40s beside the bulk: %v, want the key refused", written, err)
		}
	}
}
