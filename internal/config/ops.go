package config

import (
	"fmt"
	"net"
)

// Log formats (the log_format key, and serve's --log-format).
const (
	LogText = "text" // slog's key=value lines (the default)
	LogJSON = "json" // one JSON object per line
)

// Ops holds how the daemon is operated: its metrics endpoint and its log.
type Ops struct {
	// MetricsListen, when set (metrics_listen), is the host:port where
	// serve answers Prometheus scrapes at /metrics over plain HTTP. It
	// must be a loopback address unless AllowInsecureMetrics is set: the
	// endpoint has no authentication, and it names every server. "" serves
	// no metrics.
	MetricsListen string
	// AllowInsecureMetrics (allow_insecure_metrics) lets MetricsListen be
	// an address other machines can reach.
	AllowInsecureMetrics bool
	// Pprof (metrics_pprof) also serves net/http/pprof's profiles at
	// /debug/pprof/ on MetricsListen.
	Pprof bool
	// LogFormat is LogText or LogJSON (log_format). Default LogText.
	LogFormat string
}

// opsFile is the on-disk shape of Ops; file inlines it.
type opsFile struct {
	MetricsListen        string `yaml:"metrics_listen"`
	AllowInsecureMetrics bool   `yaml:"allow_insecure_metrics"`
	MetricsPprof         bool   `yaml:"metrics_pprof"`
	LogFormat            string `yaml:"log_format"`
}

func (c *Config) parseOps(f *opsFile) error {
	c.Ops = Ops{MetricsListen: f.MetricsListen, AllowInsecureMetrics: f.AllowInsecureMetrics, Pprof: f.MetricsPprof, LogFormat: f.LogFormat}
	if err := CheckLogFormat(c.Ops.LogFormat); err != nil {
		return fmt.Errorf("field log_format: %w", err)
	}
	if c.Ops.LogFormat == "" {
		c.Ops.LogFormat = LogText
	}
	if f.MetricsPprof && f.MetricsListen == "" {
		return fmt.Errorf("field metrics_pprof: profiles are served on metrics_listen; set it too")
	}
	if c.Ops.MetricsListen != "" {
		if err := c.Ops.CheckMetricsListen(c.Ops.MetricsListen); err != nil {
			return fmt.Errorf("field metrics_listen: %w", err)
		}
	}
	return nil
}

// CheckLogFormat returns an error unless format is "", LogText or LogJSON.
func CheckLogFormat(format string) error {
	switch format {
	case "", LogText, LogJSON:
		return nil
	}
	return fmt.Errorf("%q is not %q or %q", format, LogText, LogJSON)
}

// CheckMetricsListen returns an error unless addr is host:port with a
// loopback host, or AllowInsecureMetrics is set and addr is host:port.
func (o Ops) CheckMetricsListen(addr string) error {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return fmt.Errorf("%q is not host:port (%v); want a loopback address such as 127.0.0.1:9464", addr, err)
	}
	if o.AllowInsecureMetrics {
		return nil
	}
	if CheckLoopback(addr) != nil {
		return fmt.Errorf("%q is not a loopback address: /metrics has no authentication and names every server (and pprof exposes the process); use 127.0.0.1, [::1] or localhost, or set allow_insecure_metrics: true", addr)
	}
	return nil
}
