package config

import (
	"strings"
	"testing"
	"time"
)

func TestContentBounds(t *testing.T) {
	tests := []struct {
		yaml    string
		bytes   int64
		pass    time.Duration
		wantErr string
	}{
		{yaml: "", bytes: 0, pass: 0},
		{yaml: "content_bytes_per_server: 8388608\ncontent_pass_time: 90s\n", bytes: 8 << 20, pass: 90 * time.Second},
		{yaml: "content_bytes_per_server: -1\ncontent_pass_time: \"0\"\n", bytes: -1, pass: -1},
		{yaml: "content_bytes_per_server: 12\n", wantErr: "content_bytes_per_server: 12 bytes is too small"},
		{yaml: "content_bytes_per_server: lots\n", wantErr: "content_bytes_per_server"},
		{yaml: "content_pass_time: soon\n", wantErr: `content_pass_time: "soon" is not a duration`},
		{yaml: "content_pass_time: -5m\n", wantErr: `content_pass_time: "-5m" is not a duration`},
	}
	for _, tt := range tests {
		c, err := Parse("c.yaml", []byte(tt.yaml+"mcpServers: {a: {command: x}}\n"), func(string) (string, bool) { return "", false })
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%q: err %v, want it to contain %q", tt.yaml, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.yaml, err)
			continue
		}
		if c.ContentBytes != tt.bytes || c.ContentPassTime != tt.pass {
			t.Errorf("%q: got %d bytes, %v; want %d, %v", tt.yaml, c.ContentBytes, c.ContentPassTime, tt.bytes, tt.pass)
		}
	}
}
