package mcp_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/mcp"
)

// A stdio server inherits contextd's environment, but not the credentials
// in it: the daemon's token and the other servers' secrets (a third-party
// server must not learn the GitHub token meant for another), whole or inside
// a longer value. Its own env entries reach it whatever they hold.
func TestStdioServersDoNotInheritOtherCredentials(t *testing.T) {
	t.Setenv("SEC2_DAEMON_TOKEN", "daemon-token-0123456789abcdef")
	t.Setenv("SEC2_OTHER_SERVERS_KEY", "other-servers-key-0123456789")
	t.Setenv("SEC2_HARMLESS", "harmless-value")
	// Held inside a URL, a list, or percent-encoded.
	t.Setenv("SEC2_REPO_URL", "https://x-access-token:other-servers-key-0123456789@git.example/r.git")
	t.Setenv("SEC2_OPTS", "--verbose token=daemon-token-0123456789abcdef")
	t.Setenv("SEC2_ESCAPED", "https://h/?k=pass%2Fword%3D0123456789")
	t.Setenv("SEC2_B64", "ZGFlbW9uLXRva2VuLTAxMjM0NTY3ODlhYmNkZWY=")                 // base64 of the daemon token
	t.Setenv("SEC2_HEX", "6f746865722d736572766572732d6b65792d30313233343536373839") // hex of the other key
	// Inside base64 of a longer text (a Docker auth's "user:TOKEN", at
	// another alignment than the token's own base64), and quoted in JSON.
	t.Setenv("SEC2_DOCKER_AUTH", "dXNlcjpkYWVtb24tdG9rZW4tMDEyMzQ1Njc4OWFiY2RlZg==") // base64 of "user:" and the daemon token
	t.Setenv("SEC2_BASIC", "bWU6UHcwcmQhMjAyNA==")                                   // base64 of "me:Pw0rd!2024"
	t.Setenv("SEC2_JSON", `{"password":"pass\/word=0123456789"}`)
	t.Setenv("SEC2_NFD", "Pa\u0308sswo\u0308rt!99")       // decomposed; configured composed
	t.Setenv("SEC2_NFD_WORDS", "Gru\u0308ße-Ku\u0308sse") // a secret looked for as a whole value only
	// Word-like secrets (a database URL's user name, a query value) are
	// only withheld when a value is exactly one of them.
	t.Setenv("SEC2_PATHLIKE", "/usr/lib/postgresql/16/bin:/home/me/engineering")
	t.Setenv("SEC2_WORD", "engineering")
	// A short password with a symbol inside a database URL; a path and
	// a region some configuration holds inside PATH-like values.
	t.Setenv("SEC2_DB_URL", "postgres://app:Pw0rd!2024@db.internal:5432/app")
	t.Setenv("SEC2_HOMEPATH", "/home/alice/.local/bin:/usr/bin")
	t.Setenv("SEC2_ENDPOINT", "https://s3.us-east-1.amazonaws.com")
	// A passphrase of words inside a connection string.
	t.Setenv("SEC2_NET", "Server=db;User Id=sa;Password=Winter 2024 Snow;")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	srv := fakeServer("env")
	srv.Env["OWN_KEY"] = "own-key-0123456789"
	sess, err := mcp.Connect(ctx, srv, &mcp.Options{HiddenEnv: []string{"daemon-token-0123456789abcdef", "other-servers-key-0123456789", "own-key-0123456789", "pass/word=0123456789", "postgresql", "engineering", "Pw0rd!2024", "/home/alice", "us-east-1", "Pässwört!99", "Grüße-Küsse", "Winter 2024 Snow"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	cs, err := sess.Read(ctx, "doc://env")
	if err != nil || len(cs) != 1 {
		t.Fatalf("read the server's environment: %v, %v", cs, err)
	}
	env := "\n" + cs[0].Text + "\n"
	for _, gone := range []string{"SEC2_DAEMON_TOKEN=", "SEC2_OTHER_SERVERS_KEY=", "SEC2_REPO_URL=", "SEC2_OPTS=", "SEC2_ESCAPED=", "SEC2_WORD=", "SEC2_B64=", "SEC2_HEX=", "SEC2_DB_URL=",
		"SEC2_DOCKER_AUTH=", "SEC2_BASIC=", "SEC2_JSON=", "SEC2_NFD=", "SEC2_NFD_WORDS=", "SEC2_NET="} {
		if strings.Contains(env, "\n"+gone) {
			t.Errorf("the server inherited %s…", gone)
		}
	}
	for _, kept := range []string{"\nSEC2_HARMLESS=harmless-value\n", "\nSEC2_PATHLIKE=/usr/lib/postgresql/16/bin:/home/me/engineering\n",
		"\nSEC2_HOMEPATH=/home/alice/.local/bin:/usr/bin\n", "\nSEC2_ENDPOINT=https://s3.us-east-1.amazonaws.com\n", "\nOWN_KEY=own-key-0123456789\n", "\nPATH=",
		// What tells a contextd started as a server that it was.
		"\n" + mcp.UpstreamOfEnv + "=" + strconv.Itoa(os.Getpid()) + "\n"} {
		if !strings.Contains(env, kept) {
			t.Errorf("the server's environment lacks %q", strings.TrimSpace(kept))
		}
	}
}
