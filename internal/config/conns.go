package config

import (
	"fmt"
	"time"
)

// Conns bounds the connections of each listener serve opens (listen,
// mcp_listen, metrics_listen), so that connections held open by a client,
// authenticated or not, cannot use up the daemon's file descriptors.
type Conns struct {
	// Max is how many connections each listener holds open at once
	// (max_connections). When a connection arrives beyond it, the oldest
	// connection that has sent nothing is closed to make room; when every
	// one has spoken, the new one waits until one closes. Zero means a
	// default derived from the process's open-file limit (see serve).
	Max int
	// IdleTimeout closes a connection with no call or request in flight for
	// this long (idle_timeout): gRPC's MaxConnectionIdle (a GOAWAY, which
	// gRPC clients follow by reconnecting), HTTP's IdleTimeout. Default
	// DefaultIdleTimeout.
	IdleTimeout time.Duration
	// HandshakeTimeout bounds the time a new connection has to say what it
	// wants (handshake_timeout): gRPC's TLS handshake and HTTP/2 preface,
	// an HTTP request's headers, and its body. A response streamed after
	// that (an MCP SSE stream, a pprof profile) is not bounded by it.
	// Default DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// Connection defaults.
const (
	DefaultIdleTimeout      = time.Minute
	DefaultHandshakeTimeout = 10 * time.Second
)

// connsFile is the on-disk shape of Conns; file inlines it.
type connsFile struct {
	MaxConnections   int    `yaml:"max_connections"`
	IdleTimeout      string `yaml:"idle_timeout"`
	HandshakeTimeout string `yaml:"handshake_timeout"`
}

func (c *Config) parseConns(f *connsFile) error {
	if f.MaxConnections < 0 {
		return fmt.Errorf("field max_connections: %d is negative; want at least 1 (or leave it out for the default)", f.MaxConnections)
	}
	c.Conns = Conns{Max: f.MaxConnections, IdleTimeout: DefaultIdleTimeout, HandshakeTimeout: DefaultHandshakeTimeout}
	for _, d := range []struct {
		key string
		s   string
		v   *time.Duration
	}{{"idle_timeout", f.IdleTimeout, &c.Conns.IdleTimeout}, {"handshake_timeout", f.HandshakeTimeout, &c.Conns.HandshakeTimeout}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil {
			return fmt.Errorf("field %s: %q is not a duration like 10s or 1m", d.key, d.s)
		}
		if v <= 0 {
			return fmt.Errorf("field %s: %q is not positive: a connection must not be held open forever", d.key, d.s)
		}
		*d.v = v
	}
	return nil
}
