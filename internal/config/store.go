package config

import (
	"fmt"
	"net/url"
	"strings"
)

// StoreEmbedded is the store: value for the default: the index in
// data_dir, nothing to run.
const StoreEmbedded = "embedded"

// parseStore validates the store: key: absent or "embedded" keeps the
// index in data_dir; a postgres:// or postgresql:// URL (${VAR} references
// expanded, so a password can come from the environment) makes that
// database the mirror shared by every replica configured with it. Errors
// never quote the URL's password.
func (c *Config) parseStore(raw string, lookup func(string) (string, bool)) error {
	if raw == "" || raw == StoreEmbedded {
		return nil
	}
	ex := expander{lookup: lookup}
	v := ex.str("store", raw)
	if ex.err != nil {
		return ex.err
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("field store: not %q or a postgres:// URL (it does not parse as a URL)", StoreEmbedded)
	}
	if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		return fmt.Errorf("field store: %q is not %q or a postgres:// or postgresql:// URL", u.Redacted(), StoreEmbedded)
	}
	if u.Host == "" && !strings.Contains(u.RawQuery, "host=") {
		return fmt.Errorf("field store: %q names no host", u.Redacted())
	}
	c.Store = v
	return nil
}

// StoreSecrets returns the credentials in Store (its password, and a
// password= parameter), for redaction.
func (c *Config) StoreSecrets() []string {
	u, err := url.Parse(c.Store)
	if c.Store == "" || err != nil {
		return nil
	}
	var out []string
	if p, ok := u.User.Password(); ok && p != "" {
		out = append(out, p)
	}
	if p := u.Query().Get("password"); p != "" {
		out = append(out, p)
	}
	return out
}
