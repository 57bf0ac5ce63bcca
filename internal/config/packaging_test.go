package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

// The configurations shipped for the container image and the systemd unit
// load, and each one's listen is allowed with its auth.
func TestShippedConfigsLoad(t *testing.T) {
	for _, p := range []string{"../../packaging/docker/config.yaml", "../../packaging/systemd/config.yaml"} {
		t.Run(filepath.Base(filepath.Dir(p)), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			c, err := config.Parse(p, data, env(map[string]string{"CONTEXTD_TOKEN": "0123456789abcdef0123456789abcdef"}))
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Warnings) > 0 || len(c.Servers) == 0 {
				t.Errorf("warnings %q, servers %v", c.Warnings, c.Servers)
			}
			if err := c.Auth.CheckListen(c.Listen); err != nil {
				t.Error(err)
			}
			if _, err := config.Parse(p, data, env(nil)); err == nil {
				t.Error("loads without CONTEXTD_TOKEN: the token would be empty")
			}
		})
	}
}
