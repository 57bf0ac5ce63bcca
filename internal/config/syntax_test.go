package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// VS Code's mcp.json is JSON with comments and trailing commas.
const vscodeJSONC = `{
  // Servers for this workspace.
  "servers": {
    /* the docs server,
       over stdio */
    "docs": {
      "type": "stdio",
      "command": "mcp-docs", // the binary on PATH
      "args": ["--root", "/srv/docs",],
    },
  },
  "inputs": [],
}
`

func TestJSONWithCommentsAndTrailingCommasLoads(t *testing.T) {
	c, err := config.Parse("mcp.json", []byte(vscodeJSONC), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Servers) != 1 || c.Servers[0].Command != "mcp-docs" || strings.Join(c.Servers[0].Args, " ") != "--root /srv/docs" {
		t.Errorf("servers = %+v", c.Servers)
	}
	// Positions are the file's, comments and all.
	if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], `line 12: key "inputs" is ignored`) {
		t.Errorf("warnings = %q, want inputs at line 12", c.Warnings)
	}
	// A comment that holds "//" inside a string is text.
	c, err = config.Parse("mcp.json", []byte(`{"mcpServers": {"w": {"url": "https://h/mcp"}}} // https://h`), env(nil))
	if err != nil || c.Servers[0].URL != "https://h/mcp" {
		t.Errorf("url after a comment: %+v, %v", c, err)
	}
}

// Errors in JSON with comments point at the line and column in the file as
// written, whether the JSON is malformed or a key is misspelt.
func TestJSONWithCommentsErrorsKeepTheirPositions(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"missing comma", "{\n  // one server\n  \"servers\": {\n    /* note */ \"a\": {\"command\": \"x\"}\n    \"b\": {\"command\": \"y\"}\n  }\n}\n",
			"line 5, column 5: invalid character '\"'"},
		{"misspelt key", "{\n  // one server\n  /* a\n     block */\n  \"servers\": {\"a\": {\"command\": \"x\", \"index_contents\": false,},},\n}\n",
			`server "a": line 5: field "index_contents" is not one contextd reads`},
		{"unclosed comment", "{\n  \"servers\": {}\n  /* never closed\n}\n", "line 3, column 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("mcp.json", []byte(tc.body), env(nil))
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "mcp.json: ") {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// The yaml package reports a line that breaks a block at the line where
// the block starts; the error must name the line at fault.
func TestMisindentedYAMLLineIsReportedWhereItIs(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"mcpServers:\n  a:\n    command: x\n   args: [y]\n",
			"line 4: did not find expected key: check this line's indentation (the block it breaks starts on line 1)"},
		{"listen: 127.0.0.1:7878\nmcpServers:\n  a:\n      command: x\n    args: [y]\n", "line 5: did not find expected key"},
		{"listen: a\nmcpServers:\n  a: {command: x}\n    b: {command: y}\n", "line 4: did not find expected key"},
		// The yaml package places this one right.
		{"listen: a\ndata_dir: /tmp\ntokenizer: cl100k_base\n  embedder: glove\n", "line 4: mapping values are not allowed"},
		// An unclosed list: the yaml package says line 3.
		{"mcpServers:\n  a:\n    command: x\n    args: [y\n", "line 4: did not find expected ',' or ']'"},
	} {
		_, err := config.Parse("c.yaml", []byte(tc.body), env(nil))
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one containing %q", tc.body, err, tc.want)
		}
	}
}
