package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/contextd/contextd/internal/config"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestClaudeDesktopFileWorksAsIs(t *testing.T) {
	const claude = `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
      "env": {"DEBUG": "${DEBUG:-0}"}
    },
    "docs": {
      "url": "https://docs.example.internal/mcp",
      "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}
    }
  },
  "globalShortcut": "Ctrl+Space"
}`
	c, err := config.Parse("claude_desktop_config.json", []byte(claude), env(map[string]string{"DOCS_TOKEN": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []config.Server{
		{Name: "docs", Transport: config.TransportHTTP, URL: "https://docs.example.internal/mcp", Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		{Name: "filesystem", Transport: config.TransportStdio, Command: "npx",
			Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"}, Env: map[string]string{"DEBUG": "0"}},
	}
	if diff := cmp.Diff(want, c.Servers, cmpopts.IgnoreUnexported(config.Server{})); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	if c.Listen != config.DefaultListen || c.Tokenizer != config.DefaultTokenizer || c.DataDir == "" {
		t.Errorf("defaults not applied: %+v", c)
	}
	if want := []string{`claude_desktop_config.json: line 13: key "globalShortcut" is ignored (not one contextd reads)`}; !slices.Equal(c.Warnings, want) {
		t.Errorf("warnings = %q, want %q", c.Warnings, want)
	}
}

// A misspelt key would silently drop what the user asked for (a server
// whose reads have effects would be read), so it is an error that suggests
// the key meant; a key contextd has no use for, such as a host's own, is
// only a warning, so the host's file keeps working.
func TestMisspeltKeysFailAndForeignKeysWarn(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"mcpServers: {a: {command: x, index_contents: false}}", `server "a": line 1: field "index_contents" is not one contextd reads; did you mean "index_content"?`},
		{"mcpServers: {a: {url: 'http://h/mcp', header: {X: y}}}", `did you mean "headers"?`},
		{"mcpServers: {a: {command: x, Disable: true}}", `did you mean "disabled"?`},
		{"mcp_servers: {a: {command: x}}", `line 1: key "mcp_servers" is not one contextd reads; did you mean "mcpServers"?`},
		{"dataDir: /tmp/x\nmcpServers: {a: {command: x}}", `did you mean "data_dir"?`},
		{"pollinterval: 1m\nmcpServers: {a: {command: x}}", `did you mean "poll_interval"?`},
		{"mcpServers: {a: {command: x, agrs: [y]}}", `did you mean "args"?`},
		{"mcpServers: {a: {cmd: x}}", `field "cmd" is not one contextd reads; did you mean "command"?`},
		{"polling_interval: 5m\nmcpServers: {a: {command: x}}", `key "polling_interval" is not one contextd reads; did you mean "poll_interval"?`},
		{"mcpServers: {a: {command: x, index_the_content: false}}", `did you mean "index_content"?`},
		{"data_dr: /x\nmcpServers: {a: {command: x}}", `did you mean "data_dir"?`},
		{"base: &b {command: x, index_contents: false}\nmcpServers: {a: {<<: *b, args: [y]}}", `server "a": line 1: field "index_contents"`},
		{"base: &b {command: x, index_contents: false}\nmcpServers: {a: *b}", `server "a": line 1: field "index_contents"`},
	} {
		_, err := config.Parse("c.yaml", []byte(tc.body), env(nil))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "c.yaml: ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n err = %v\nwant ErrInvalid naming the file and %q", tc.body, err, tc.want)
		}
	}
	const vscode = `{
  "inputs": [{"type": "promptString", "id": "token"}],
  "servers": {
    "gh": {"type": "stdio", "command": "gh-mcp", "envFile": "${workspaceFolder}/.env", "timeout": 30}
  }
}`
	c, err := config.Parse("mcp.json", []byte(vscode), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`mcp.json: line 2: key "inputs" is ignored (not one contextd reads)`,
		`mcp.json: server "gh": line 4: field "envFile" is ignored (not one contextd reads)`,
		`mcp.json: server "gh": line 4: field "timeout" is ignored (not one contextd reads)`,
	}
	if !slices.Equal(c.Warnings, want) {
		t.Errorf("warnings = %q\nwant %q", c.Warnings, want)
	}
	if len(c.Servers) != 1 || c.Servers[0].Command != "gh-mcp" {
		t.Errorf("servers = %+v, want gh kept", c.Servers)
	}
	// A key marked as no setting, the way a JSON file comments one out, is
	// foreign even where dropping "_" and "-" would spell one of ours.
	c, err = config.Parse("c.json", []byte(`{"$schema": "s", "x-servers": {}, "_servers": {}, "mcpServers": {"a": {"command": "x", "_command": "y", "_env": {}, "X-Url": "u", "//": "c"}}}`), env(nil))
	if err != nil {
		t.Fatalf("marked keys: %v", err)
	}
	if len(c.Warnings) != 7 || len(c.Servers) != 1 || c.Servers[0].Command != "x" {
		t.Errorf("marked keys: warnings %q, servers %+v; want 7 warnings and a kept", c.Warnings, c.Servers)
	}
	// A document end marker or an empty document after the first is no setting.
	for _, tail := range []string{"---\n", "...\n", "---\n# all off\n", "---\n~\n"} {
		if c, err := config.Parse("c.yaml", []byte("mcpServers: {a: {command: x}}\n"+tail), env(nil)); err != nil || len(c.Servers) != 1 {
			t.Errorf("then %q: err %v", tail, err)
		}
	}
	// expand_templates: absent means true; false is kept; anything else is an error.
	c, err = config.Parse("e.yaml", []byte("mcpServers:\n  a: {command: x}\n  b: {command: x, expand_templates: false}\n  c: {command: x, expand_templates: \"TRUE\"}\n"), env(nil))
	if err != nil || c.Servers[0].NoTemplateExpansion || !c.Servers[1].NoTemplateExpansion || c.Servers[2].NoTemplateExpansion {
		t.Errorf("expand_templates: err %v, servers %+v", err, c.Servers)
	}
	if _, err := config.Parse("e.yaml", []byte("mcpServers: {a: {command: x, expand_templates: sometimes}}\n"), env(nil)); err == nil || !strings.Contains(err.Error(), `field expand_templates: "sometimes" is not true or false`) {
		t.Errorf("expand_templates: sometimes: err %v", err)
	}
	// YAML merge keys and aliases are YAML, not unknown keys.
	c, err = config.Parse("m.yaml", []byte("mcpServers:\n  a: &a {command: x, index_content: false}\n  b: {<<: *a, args: [y]}\n  c: *a\n"), env(nil))
	if err != nil || len(c.Warnings) != 0 || len(c.Servers) != 3 || !c.Servers[1].NoContentIndex || c.Servers[1].Command != "x" {
		t.Errorf("merge keys: err %v, warnings %q, servers %+v", err, c.Warnings, c.Servers)
	}
}

// Servers reached through an alias or a merge key, at the top level or in
// the server map, are decoded like any other, so they are checked like any
// other; the merge key itself is neither a key nor a server, and a merged
// entry the mapping overrides is not what the decoder uses, so it is not
// checked. A null server name (~) would make the decoder drop the server.
func TestMergedAndAliasedServersAreChecked(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"d: &d {a: {command: x, index_contents: false}}\nmcpServers: *d", `server "a": line 1: field "index_contents"`},
		{"d: &d {a: {command: x, index_contents: false}}\nmcpServers: {<<: *d, b: {command: y}}", `server "a": line 1: field "index_contents"`},
		{"d: &d {mcpServers: {a: {command: x, index_contents: false}}}\n<<: *d", `server "a": line 1: field "index_contents"`},
		{"d: &d {mcp_servers: {a: {command: x}}}\n<<: *d", `line 1: key "mcp_servers"`},
		{"mcpServers: {~: {command: x}}", `line 1: server name ~ is YAML's null`},
	} {
		_, err := config.Parse("c.yaml", []byte(tc.body), env(nil))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:\n err = %v\nwant ErrInvalid naming %q", tc.body, err, tc.want)
		}
	}
	const y = `shared: &s {a: {command: x}, b: {command: z, index_contents: false}}
<<: {listen: "unix:///s"}
mcpServers: {<<: *s, b: {command: y}}
`
	c, err := config.Parse("m.yaml", []byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`m.yaml: line 1: key "shared" is ignored (not one contextd reads)`}; !slices.Equal(c.Warnings, want) {
		t.Errorf("warnings = %q, want %q", c.Warnings, want)
	}
	if c.Listen != "unix:///s" || len(c.Servers) != 2 || c.Servers[0].Command != "x" || c.Servers[1].Command != "y" {
		t.Errorf("listen %q, servers %+v; want the merged listen, a from the merge, b its own", c.Listen, c.Servers)
	}
}

// GitHub Copilot CLI's mcp-config.json calls a stdio server "local" and
// has keys of its own (tools), which are only warnings.
func TestCopilotCLIFileWorksAsIs(t *testing.T) {
	const copilot = `{"mcpServers": {
  "playwright": {"type": "local", "command": "npx", "args": ["@playwright/mcp@latest"], "env": {}, "tools": ["*"]},
  "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/", "headers": {"X-MCP-Toolsets": "repos"}, "tools": ["*"]}
}}`
	c, err := config.Parse("mcp-config.json", []byte(copilot), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 2 || c.Servers[1].Transport != config.TransportStdio || c.Servers[1].Command != "npx" || len(c.Warnings) != 2 {
		t.Errorf("servers %+v, warnings %q; want playwright on stdio and two warnings for tools", c.Servers, c.Warnings)
	}
}

func TestYAMLWithSettingsAndVSCodeServers(t *testing.T) {
	const y = `
listen: unix:///run/contextd.sock
poll_interval: 90s
max_message_bytes: 1048576
data_dir: /var/lib/contextd
tokenizer: o200k_base
embedder: glove
servers:            # VS Code's mcp.json shape
  remote:
    type: http
    url: http://127.0.0.1:3001/mcp
    index_content: false
  local:
    type: stdio
    command: node
    args: [server.js]
    cwd: /srv/mcp
  old:
    disabled: true
    command: ignored
`
	c, err := config.Parse("c.yaml", []byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "unix:///run/contextd.sock" || c.DataDir != "/var/lib/contextd" || c.Tokenizer != "o200k_base" || c.Embedder != config.EmbedderGloVe || c.PollInterval != 90*time.Second || c.MaxMessageBytes != 1<<20 {
		t.Errorf("settings = %+v", c)
	}
	if len(c.Servers) != 2 || c.Servers[0].Name != "local" || c.Servers[0].Cwd != "/srv/mcp" || c.Servers[1].Transport != config.TransportHTTP {
		t.Errorf("servers = %+v", c.Servers)
	}
	if len(c.Servers) == 2 && (c.Servers[0].NoContentIndex || !c.Servers[1].NoContentIndex) {
		t.Errorf("index_content: local %v, remote %v; want indexed by default, off where set false", !c.Servers[0].NoContentIndex, !c.Servers[1].NoContentIndex)
	}
	_, err = config.Parse("c.yaml", []byte("mcpServers:\n  a:\n    command: x\n    index_content: maybe\n"), env(nil))
	if err == nil || !strings.Contains(err.Error(), "c.yaml") || !strings.Contains(err.Error(), `server "a": field index_content: "maybe"`) {
		t.Errorf("index_content: maybe: err = %v, want an error naming the file, the server and the field", err)
	}
}

func TestErrorsNameFileServerAndField(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"unset variable", `mcpServers: {docs: {url: "https://x/mcp", headers: {Authorization: "Bearer ${NOPE}"}}}`,
			[]string{"bad.yaml", `server "docs"`, "headers.Authorization", "NOPE"}},
		{"neither command nor url", `mcpServers: {empty: {args: [x]}}`, []string{"bad.yaml", `server "empty"`, "command", "url"}},
		{"both", `mcpServers: {two: {command: a, url: "http://x"}}`, []string{`server "two"`, "not both"}},
		{"bad url", `mcpServers: {web: {url: "ftp://x"}}`, []string{`server "web"`, "field url", "ftp://x"}},
		{"bad type", `mcpServers: {t: {type: carrier-pigeon, command: x}}`, []string{`server "t"`, "field type", "carrier-pigeon"}},
		{"stdio without command", `mcpServers: {s: {type: stdio}}`, []string{`server "s"`, "field command"}},
		{"not yaml", "mcpServers: [", []string{"bad.yaml"}},
		{"yaml with a // comment", "// my servers\nmcpServers: {a: {command: x}\n", []string{"bad.yaml", "line 1: a // comment"}},
		{"servers as a list without names", "mcpServers:\n  - command: x\n", []string{"bad.yaml", "line 2", "field mcpServers: a list whose item has no name"}},
		{"servers as a list naming one twice", "mcpServers:\n  - name: a\n    command: x\n  - name: a\n    command: y\n", []string{"bad.yaml", "line 4", `server "a" is named twice (first at line 2)`}},
		{"bad poll interval", "poll_interval: often\nmcpServers: {a: {command: x}}", []string{"bad.yaml", "poll_interval", "often"}},
		{"unknown tokenizer", "tokenizer: p50k\nmcpServers: {a: {command: x}}", []string{"bad.yaml", "field tokenizer", "p50k", "cl100k_base"}},
		{"unknown embedder", "embedder: word2vec\nmcpServers: {a: {command: x}}", []string{"bad.yaml", "field embedder", "word2vec", "use-lite"}},
		{"defined twice", "mcpServers: {a: {command: x}}\nservers: {a: {command: y}}", []string{`server "a"`, "both"}},
		// yaml.Unmarshal reads the first document and stops, dropping the rest.
		{"second document", "mcpServers: {a: {command: x}}\n---\nlisten: 127.0.0.1:1\n", []string{"bad.yaml", "line 3", "second YAML document"}},
		{"a stray brace", "{\"mcpServers\": {\"a\": {\"command\": \"x\"}}},\n  \"b\": {\"command\": \"y\"}\n}}\n", []string{"bad.yaml", "after the end of the first document"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("bad.yaml", []byte(tc.body), env(nil))
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// A small file of aliases to aliases (<<: [*a, *a, …] four deep) names
// 10⁸ merges; checking its keys must not make them.
func TestAliasesOfAliasesAreCheap(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 {command: x}\n")
	for i := 1; i <= 4; i++ {
		fmt.Fprintf(&b, "a%d: &a%d {<<: [*a%d%s]}\n", i, i, i-1, strings.Repeat(fmt.Sprintf(", *a%d", i-1), 99))
	}
	b.WriteString("<<: *a4\nmcpServers: {s: *a4}\n")
	done := make(chan error, 1)
	go func() { _, err := config.Parse("c.yaml", []byte(b.String()), env(nil)); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, config.ErrInvalid) {
			t.Errorf("err = %v, want ErrInvalid (excessive aliasing)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("Parse of %d bytes still running after 10s", b.Len())
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := config.Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("err = %v, want a not-exist error naming the file", err)
	}
}

// VS Code's own variables are left as they are unless the environment sets
// them, so a VS Code file loads; its ${env:VAR} is the environment's VAR.
func TestVSCodeVariables(t *testing.T) {
	const vscode = `{"servers": {"fs": {"type": "stdio", "command": "mcp-fs",
  "args": ["${workspaceFolder}/docs", "${input:token}", "${userHome}"],
  "env": {"TOKEN": "${env:GH_TOKEN}", "WS": "${workspaceFolder}"}}}}`
	c, err := config.Parse("mcp.json", []byte(vscode), env(map[string]string{"GH_TOKEN": "t0k", "userHome": "/home/me"}))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Servers[0]
	if want := []string{"${workspaceFolder}/docs", "${input:token}", "/home/me"}; !slices.Equal(s.Args, want) {
		t.Errorf("args = %q, want %q", s.Args, want)
	}
	if s.Env["TOKEN"] != "t0k" || s.Env["WS"] != "${workspaceFolder}" {
		t.Errorf("env = %q, want TOKEN from the environment and WS as written", s.Env)
	}
	// ${env:NAME} of an unset variable is an error, like ${NAME}.
	if _, err := config.Parse("mcp.json", []byte(`{"servers": {"fs": {"command": "x", "args": ["${env:NOPE}"]}}}`), env(nil)); err == nil || !strings.Contains(err.Error(), "environment variable NOPE is not set") {
		t.Errorf("${env:NOPE}: err = %v", err)
	}
}

// A file with several misspelt keys names them all in one error, so a
// user fixes them in one pass; a file of thousands names ten.
func TestEveryMisspeltKeyIsNamed(t *testing.T) {
	_, err := config.Parse("c.yaml", []byte("tokeniser: cl100k_base\nlisen: 127.0.0.1:1\nmcpServers:\n  a: {command: x, index_contents: false}\n"), nil)
	for _, want := range []string{`"tokeniser"`, `"lisen"`, `"index_contents"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v; want it to name %s", err, want)
		}
	}
	var many strings.Builder
	many.WriteString("mcpServers:\n")
	for i := range 5000 {
		fmt.Fprintf(&many, "  s%d: {comand: x}\n", i)
	}
	_, err = config.Parse("c.yaml", []byte(many.String()), nil)
	if err == nil || !strings.Contains(err.Error(), "and 4990 more") || strings.Count(err.Error(), "\n") != 10 {
		t.Errorf("5,000 misspelt keys: %d lines ending %q; want 10 named and the rest counted", strings.Count(fmt.Sprint(err), "\n")+1, fmt.Sprint(err)[max(0, len(fmt.Sprint(err))-40):])
	}
}

// A reference in another tool's syntax is sent as written: the load warns,
// naming the field only (a "$" in a password would be quoted with it).
func TestReferencesContextdDoesNotExpandAreWarnedOf(t *testing.T) {
	c, err := config.Parse("c.yaml", []byte(`
mcpServers:
  a: { url: "https://a.example/mcp", headers: { Authorization: "Bearer $DOCS_TOKEN" } }
  b: { url: "https://b.example/mcp", headers: { X-Key: "%DOCS_TOKEN%" } }
  c: { url: "https://c.example/mcp", headers: { X-Key: "{{ secrets.DOCS_TOKEN }}" } }
  d: { command: x, env: { API_KEY: "${input:apiKey}" } }
  e: { command: "$HOME/bin/srv", args: ["--root", "$HOME/docs"] }
  ok: { url: "https://e.example/caf%C3%A9s%20x?q=${Q}&$top=10&$filter=a", headers: { Authorization: "Bearer ${T}", X-Other: "${env:T}", X-Api-Key: "Pa$sw0rd%C3%A9" }, env: { HOME_DIR: "${HOME:-/root}", DB_URL: "postgres://u:Pa$sword@h/db", TEMPLATE: "Hello {{name}}", ENC: "%C3%A9%20" } }
  shell: { command: sh, args: ["-c", "exec srv --root $HOME/docs"] }
`), env(map[string]string{"T": "tok$en-Value%x%", "Q": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "headers.Authorization", "b": "headers.X-Key", "c": "headers.X-Key", "d": "env.API_KEY", "e": "args[1]"}
	for name, field := range want {
		found := false
		for _, w := range c.Warnings {
			if strings.Contains(w, fmt.Sprintf("server %q: field %s holds a reference contextd does not expand", name, field)) {
				found = true
			}
			if strings.Contains(w, "DOCS_TOKEN") || strings.Contains(w, "apiKey") {
				t.Errorf("warning %q quotes what was written", w)
			}
		}
		if !found {
			t.Errorf("server %s: no warning about %s in %q", name, field, c.Warnings)
		}
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, `server "ok"`) || strings.Contains(w, `server "shell"`) {
			t.Errorf("warning %q about ${VAR} references (or their values)", w)
		}
	}
}

// An unquoted ${VAR} in a { … } mapping is a YAML error that names neither;
// the error says to quote it.
func TestAnUnquotedVariableInAFlowMappingIsNamed(t *testing.T) {
	for _, body := range []string{
		"data_dir: /tmp/x\nauth: { token: ${CONTEXTD_TOKEN} }\n",
		"mcpServers:\n  docs: { url: \"https://d.example/mcp\", headers: { Authorization: ${DOCS_TOKEN} } }\n",
		"mcpServers:\n  docs: { url: \"https://d.example/mcp\", headers: { Authorization: Bearer ${DOCS_TOKEN} } }\n",
		"mcpServers:\n  docs: { url: https://d.example/${DOCS_TOKEN}/mcp }\n",
	} {
		_, err := config.Parse("c.yaml", []byte(body), env(map[string]string{"CONTEXTD_TOKEN": "0123456789abcdef0123", "DOCS_TOKEN": "x"}))
		if err == nil || !strings.Contains(err.Error(), "line 2: a ${VAR} in a { … } mapping must be quoted") {
			t.Errorf("%q: %v; want the line and a hint to quote", body, err)
		}
	}
	// Another error, a ${VAR} in a comment or quoted: no hint.
	for _, body := range []string{
		"# auth: { token: ${X} }\nmcpServers:\n  fs:\n\tcommand: x\n",
		"mcpServers:\n  fs: { command: sh, args: [\"-c\", \"print({ a: ${HOME} })\"] }\n  bad:\n   - x\n  y: 1\n",
	} {
		_, err := config.Parse("c.yaml", []byte(body), env(map[string]string{"X": "x", "HOME": "/h"}))
		if err == nil || strings.Contains(err.Error(), "must be quoted") {
			t.Errorf("%q: %v; want an error without the hint", body, err)
		}
	}
}

// An endpoint tells servers apart by what they reach, not by a rotated
// credential, an environment or headers.
func TestEndpointTellsServersApartButNotTheirCredentials(t *testing.T) {
	base := config.Server{Name: "gh", Transport: config.TransportStdio, Command: "npx", Args: []string{"-y", "server-github", "--token", "ghp_1111aaaa2222bbbb3333"}}
	same := base
	same.Args = []string{"-y", "server-github", "--token", "ghp_9999zzzz8888yyyy7777"}
	same.Env = map[string]string{"LOG": "debug"}
	other := base
	other.Args = []string{"-y", "server-gitlab", "--token", "ghp_1111aaaa2222bbbb3333"}
	web := config.Server{Name: "gh", Transport: config.TransportHTTP, URL: "https://mcp.example.com/mcp?api_key=k1k1k1k1k1k1", Headers: map[string]string{"Authorization": "Bearer abcdefgh12345678"}}
	webRotated := web
	webRotated.URL = "https://mcp.example.com/mcp?api_key=k2k2k2k2k2k2"
	webRotated.Headers = map[string]string{"Authorization": "Bearer zyxwvuts87654321"}
	webOther := web
	webOther.URL = "https://mcp.other.example.com/mcp?api_key=k1k1k1k1k1k1"

	if a, b := base.Endpoint(), same.Endpoint(); a != b {
		t.Errorf("a rotated token and an env change the endpoint: %s, %s", a, b)
	}
	if base.Endpoint() == other.Endpoint() {
		t.Error("another package in args keeps the endpoint")
	}
	if a, b := web.Endpoint(), webRotated.Endpoint(); a != b {
		t.Errorf("a rotated query key and header change the endpoint: %s, %s", a, b)
	}
	if web.Endpoint() == webOther.Endpoint() {
		t.Error("another host keeps the endpoint")
	}
	if web.Endpoint() == base.Endpoint() {
		t.Error("a stdio and an HTTP server share an endpoint")
	}
	// Path segments with digits are taken for secrets: two of other
	// lengths are two servers on one host.
	gw := config.Server{Name: "docs", Transport: config.TransportHTTP, URL: "https://gateway.example.com/servers/honest-docs-server-1234/mcp"}
	gwOther := gw
	gwOther.URL = "https://gateway.example.com/servers/other-docs-server-98/mcp"
	if len(gw.Secrets()) == 0 || gw.Endpoint() == gwOther.Endpoint() {
		t.Errorf("two servers on a gateway, path segments taken for secrets (%d): one endpoint", len(gw.Secrets()))
	}
	if e := base.Endpoint(); len(e) != 32 || strings.Contains(e, "ghp_") {
		t.Errorf("endpoint %q: want 32 hex digits", e)
	}
}

// The same server gives the same endpoint at every call: two secrets of a
// length, found in map order, overlapping in an argument, gave two (434
// and 66 of 500 calls), and each change of it forgot a withheld bridge.
func TestEndpointIsTheSameAtEveryCall(t *testing.T) {
	s := config.Server{Name: "b", Transport: config.TransportStdio, Command: "bridge", Args: []string{"--label=ab12cd34ab12cd34ab"},
		Env: map[string]string{"API_KEY": "ab12cd34ab12cd34", "SECRET_TOKEN": "12cd34ab12cd34ab"}}
	first := s.Endpoint()
	for range 500 {
		if e := s.Endpoint(); e != first {
			t.Fatalf("endpoint %s, then %s", first, e)
		}
	}
	// A short secret stays in: two servers differing by a one-letter
	// profile are two.
	a := config.Server{Name: "x", Transport: config.TransportHTTP, URL: "https://example.com/a/mcp?api_key=k1k1k1k1k1k1&profile=p"}
	b := a
	b.URL = "https://example.com/b/mcp?api_key=k1k1k1k1k1k1&profile=p"
	if a.Endpoint() == b.Endpoint() {
		t.Error("two paths alike once a one-letter secret is left out")
	}
}
