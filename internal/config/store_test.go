package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestStoreKey(t *testing.T) {
	env := map[string]string{"PGPASS": "s3cret"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		yaml, want, err string
	}{
		{yaml: "", want: ""},
		{yaml: "store: embedded", want: ""},
		{yaml: "store: postgres://u:${PGPASS}@db:5432/ctx", want: "postgres://u:s3cret@db:5432/ctx"},
		{yaml: "store: postgresql://db/ctx?sslmode=require", want: "postgresql://db/ctx?sslmode=require"},
		{yaml: "store: mysql://u:pw@db/x", err: `field store: "mysql://…@db/…" is not "embedded" or a postgres:// or postgresql:// URL`},
		{yaml: "store: postgres:///ctx", err: "names no host"},
		// A password given as a parameter is not quoted either.
		{yaml: "store: postgres:///ctx?password=${PGPASS}&sslmode=disable", err: `field store: "postgres:///…" names no host`},
		{yaml: "store: mysql://db/x?sslpassword=${PGPASS}", err: `field store: "mysql://db/…" is not "embedded"`},
		{yaml: "store: postgres://u:${NOPE}@db/x", err: "environment variable NOPE is not set"},
		{yaml: "store: chromem", err: "is not \"embedded\""},
	} {
		c, err := Parse("c.yaml", []byte(tc.yaml), lookup)
		if tc.err != "" {
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "pw@") {
				t.Errorf("%q: error %v; want one containing %q", tc.yaml, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		if c.Store != tc.want {
			t.Errorf("%q: Store = %q; want %q", tc.yaml, c.Store, tc.want)
		}
	}
	c, _ := Parse("c.yaml", []byte("store: postgres://u:${PGPASS}@db/x?password=qq&sslmode=disable"), lookup)
	if got := c.StoreSecrets(); !slices.Contains(got, "s3cret") || !slices.Contains(got, "qq") {
		t.Errorf("StoreSecrets = %q", got)
	}
	// Passwords Go's parser misreads (a port and a fragment, a path), as
	// pgx and the user read them.
	for _, pw := range []string{"2024#Winter!", "42/Answer!x"} {
		c, _ := Parse("c.yaml", []byte("store: ${URL}"), func(string) (string, bool) { return "postgres://contextd:" + pw + "@db/contextd", true })
		if got := c.StoreSecrets(); !slices.Contains(got, pw) {
			t.Errorf("StoreSecrets = %q; want %q among them", got, pw)
		}
	}
}

// Servers a run leaves out keep their credentials among Secrets.
func TestKeepServersKeepsTheOthersSecrets(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`
mcpServers:
  gh: { command: gh-mcp, env: { GITHUB_PERSONAL_ACCESS_TOKEN: ghp_Zq8mT3kLw9PxR2vN7bYc0123 } }
  evil: { command: evil }
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	c.KeepServers(func(s Server) bool { return s.Name == "evil" })
	if len(c.Servers) != 1 || c.Servers[0].Name != "evil" || !slices.Contains(c.Secrets(), "ghp_Zq8mT3kLw9PxR2vN7bYc0123") {
		t.Errorf("servers %+v, secrets %q; want evil alone, gh's token among the secrets", c.Servers, c.Secrets())
	}
}
