package config

import (
	"bytes"
	"fmt"
	"os"
)

// minWrittenSecret is the shortest credential warnWrittenSecrets looks
// for in the file: shorter values (a URL's page=2) are found anywhere.
const minWrittenSecret = 8

// warnWrittenSecrets adds a warning when the file at path, which holds
// data, is readable by other users and has a credential written in it
// (the auth token, or a server's header, environment or URL secret)
// rather than taken from ${VAR} or a token_file: anyone who can read the
// file could call the daemon, or the upstream servers, as its owner.
func (c *Config) warnWrittenSecrets(path string, data []byte) {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	secrets := []string{c.Auth.Token}
	for _, s := range c.Servers {
		secrets = append(secrets, s.Secrets()...)
	}
	for _, s := range secrets {
		if len(s) >= minWrittenSecret && bytes.Contains(data, []byte(s)) {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s has credentials written in it and is readable by others (mode %v): chmod 600 it, or take them from ${VAR} or auth.token_file", path, fi.Mode().Perm()))
			return
		}
	}
}
