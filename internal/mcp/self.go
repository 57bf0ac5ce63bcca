package mcp

import (
	"crypto/rand"
	"errors"
)

// InstanceMetaKey is the _meta key under which contextd's own MCP server
// names its process in every initialize (and server/discover) result:
// Instance's value. A contextd whose configuration lists its own
// mcp_listen (a host file read as is, a bridge such as mcp-remote to it)
// would otherwise mirror itself, one level deeper at each list_changed it
// sends itself, every read going round through its own endpoint.
const InstanceMetaKey = "contextd/instance"

var instance = rand.Text()

// Instance returns this process's instance name: 26 random base32
// characters, drawn at start.
func Instance() string { return instance }

// ErrSelf is the error of a connect to a server that is this contextd
// itself.
var ErrSelf = errors.New("the server is this contextd itself (its own mcp_listen, directly or through a bridge): not mirrored; remove that entry from the configuration")

// isSelf reports whether meta, an initialize or discover result's _meta,
// names this process.
func isSelf(meta map[string]any) bool {
	v, ok := meta[InstanceMetaKey].(string)
	return ok && v == instance
}
