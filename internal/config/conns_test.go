package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/config"
)

func TestConnsKeys(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	def := config.Conns{IdleTimeout: config.DefaultIdleTimeout, HandshakeTimeout: config.DefaultHandshakeTimeout}
	tests := []struct {
		name, body string
		want       config.Conns
		err        string
	}{
		{"defaults", "", def, ""},
		{"all", "max_connections: 64\nidle_timeout: 30s\nhandshake_timeout: 2s\n",
			config.Conns{Max: 64, IdleTimeout: 30 * time.Second, HandshakeTimeout: 2 * time.Second}, ""},
		{"negative cap", "max_connections: -1\n", config.Conns{}, "field max_connections: -1 is negative"},
		{"not a number", "max_connections: many\n", config.Conns{}, "line 1: cannot unmarshal !!str a value into int"},
		{"bad duration", "idle_timeout: 5\n", config.Conns{}, `field idle_timeout: "5" is not a duration like 10s or 1m`},
		{"zero timeout", "handshake_timeout: 0s\n", config.Conns{}, `field handshake_timeout: "0s" is not positive`},
		{"misspelt", "max_connection: 4\n", config.Conns{}, `did you mean "max_connections"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse("c.yaml", []byte(tt.body), env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one containing %q", err, tt.err)
				}
				if !errors.Is(err, config.ErrInvalid) {
					t.Errorf("err = %v, want ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Conns != tt.want {
				t.Errorf("Conns = %+v, want %+v", c.Conns, tt.want)
			}
		})
	}
	if got := config.Default().Conns; got != def {
		t.Errorf("Default().Conns = %+v, want %+v", got, def)
	}
}
