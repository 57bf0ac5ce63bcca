package service

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// MaxRequestFields bounds the top-level fields of one request message:
// each element of a repeated field (a pin, a server name) is one. Decoded,
// an element costs a Go value of tens of bytes however short it is on the
// wire, and gRPC decodes a request before any interceptor (the token, the
// admission) sees it: a 1 MiB Assemble of 524,000 empty pins held 44 MB
// while it waited for a turn, and 16 callers sending them took the daemon
// to 1.9 GB. A request past the bound fails (INTERNAL, "failed to
// unmarshal") before it is decoded. Honest requests hold a few dozen
// fields; a query counts one, whatever its length.
const MaxRequestFields = 16 << 10

// pooledRequestBytes is the largest request decoded from a pooled buffer
// (gRPC's pool tiers: 256 B, 4, 16 and 32 KiB, then 1 MiB); a larger one
// gets a buffer of its own size.
const pooledRequestBytes = 32 << 10

// boundedCodec is gRPC's proto codec, refusing to decode a message of more
// than MaxRequestFields top-level fields.
type boundedCodec struct{ encoding.CodecV2 }

// requestCodec returns the codec the server decodes requests with.
func requestCodec() encoding.CodecV2 {
	return boundedCodec{encoding.GetCodecV2(protocodec.Name)}
}

func (c boundedCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return c.CodecV2.Unmarshal(data, v)
	}
	var b []byte
	if data.Len() <= pooledRequestBytes {
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		defer buf.Free()
		b = buf.ReadOnlyData()
	} else {
		// The pool's next tier past 32 KiB is 1 MiB: a 64 KB request
		// would take a megabyte for as long as it is decoded.
		b = data.Materialize()
	}
	if n := fields(b, MaxRequestFields); n > MaxRequestFields {
		return fmt.Errorf("the request message has over %d fields (repeated elements count one each)", MaxRequestFields)
	}
	return proto.Unmarshal(b, m)
}

// fields returns the top-level fields of the protobuf message b, counting
// no further than limit+1; a malformed field ends the count (proto.Unmarshal
// reports it).
func fields(b []byte, limit int) int {
	n := 0
	for len(b) > 0 && n <= limit {
		num, typ, tl := protowire.ConsumeTag(b)
		if tl < 0 {
			break
		}
		vl := protowire.ConsumeFieldValue(num, typ, b[tl:])
		if vl < 0 {
			break
		}
		b = b[tl+vl:]
		n++
	}
	return n
}
