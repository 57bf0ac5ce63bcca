package mcp

import (
	"context"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// sseTransport is the go-sdk's client of the HTTP+SSE transport of
// 2024-11-05, whose event stream lives as long as the session rather than
// the context of the handshake: the go-sdk opens the stream's GET with the
// context passed to Connect, and Connect's context bounds the handshake
// only (a session that ended with it would end as soon as it began).
type sseTransport struct {
	*mcpsdk.SSEClientTransport
}

func (t sseTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	streamCtx, endStream := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, endStream)
	conn, err := t.SSEClientTransport.Connect(streamCtx)
	if !stop() {
		// ctx ended while the stream was opened.
		if err == nil {
			conn.Close()
		}
		endStream()
		return nil, context.Cause(ctx)
	}
	if err != nil {
		endStream()
		return nil, err
	}
	return sseConn{Connection: conn, endStream: endStream}, nil
}

// sseConn ends its event stream when closed.
type sseConn struct {
	mcpsdk.Connection
	endStream context.CancelFunc
}

func (c sseConn) Close() error {
	err := c.Connection.Close()
	c.endStream()
	return err
}
