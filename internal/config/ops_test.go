package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/config"
)

func TestOpsKeys(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	tests := []struct {
		name, body string
		want       config.Ops
		err        string
	}{
		{"defaults", "", config.Ops{LogFormat: config.LogText}, ""},
		{"all", "metrics_listen: 127.0.0.1:9464\nmetrics_pprof: true\nlog_format: json\n",
			config.Ops{MetricsListen: "127.0.0.1:9464", Pprof: true, LogFormat: config.LogJSON}, ""},
		{"localhost", "metrics_listen: localhost:9464\n", config.Ops{MetricsListen: "localhost:9464", LogFormat: config.LogText}, ""},
		{"not loopback", "metrics_listen: 0.0.0.0:9464\n", config.Ops{}, "not a loopback address"},
		{"not loopback, allowed", "metrics_listen: 0.0.0.0:9464\nallow_insecure_metrics: true\n",
			config.Ops{MetricsListen: "0.0.0.0:9464", AllowInsecureMetrics: true, LogFormat: config.LogText}, ""},
		{"no port", "metrics_listen: 127.0.0.1\n", config.Ops{}, "not host:port"},
		{"pprof without listen", "metrics_pprof: true\n", config.Ops{}, "set it too"},
		{"bad format", "log_format: xml\n", config.Ops{}, `field log_format: "xml" is not "text" or "json"`},
		{"misspelt", "metric_listen: 127.0.0.1:9464\n", config.Ops{}, `did you mean "metrics_listen"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := config.Parse("c.yaml", []byte(tt.body), env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.Is(err, config.ErrInvalid) {
					t.Fatalf("err = %v, want ErrInvalid containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Ops != tt.want {
				t.Errorf("Ops = %+v, want %+v", c.Ops, tt.want)
			}
		})
	}
}
