package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// metaInvalid marks, in a content item's _meta, an item the wire layer had
// to empty; its value says why. Session.Read turns it into Content.Error.
const metaInvalid = "io.contextd/invalid"

// repairTransport wraps a transport so that one bad item in a result fails
// that item, not the whole result. The go-sdk decodes a result in one go:
// a single blob that is not standard base64, or a descriptor field of the
// wrong type, makes it reject the entire resources/read or resources/list
// answer. The connection rewrites those results before the SDK sees them:
//
//   - resources/read: a blob in the URL-safe alphabet, unpadded, or broken
//     by whitespace is re-encoded as standard base64; a blob that is not
//     base64 at all is emptied and marked, so only that item fails.
//   - resources/list, resources/templates/list: an entry that does not
//     decode is replaced by one without a URI (which the list walk rejects
//     and reports), after dropping a malformed optional field if that alone
//     makes it decode.
type repairTransport struct {
	base mcpsdk.Transport
}

func (t repairTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	c, err := t.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &repairConn{Connection: c, calls: map[string]string{}}, nil
}

type repairConn struct {
	mcpsdk.Connection

	mu    sync.Mutex
	calls map[string]string // request ID → method, for calls awaiting an answer
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *repairConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	var tracked string
	if req, ok := msg.(*jsonrpc.Request); ok {
		switch {
		case req.ID.IsValid() && (req.Method == "resources/read" || req.Method == "resources/list" || req.Method == "resources/templates/list"):
			tracked = idKey(req.ID)
			c.mu.Lock()
			c.calls[tracked] = req.Method
			c.mu.Unlock()
		case req.Method == "notifications/cancelled":
			// A cancelled call may never be answered: forget it now.
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				var v any
				if json.Unmarshal(p.RequestID, &v) == nil {
					if f, ok := v.(float64); ok {
						v = int64(f)
					}
					c.mu.Lock()
					delete(c.calls, fmt.Sprintf("%T:%v", v, v))
					c.mu.Unlock()
				}
			}
		}
	}
	err := c.Connection.Write(ctx, msg)
	if err != nil && tracked != "" {
		c.mu.Lock()
		delete(c.calls, tracked)
		c.mu.Unlock()
	}
	return err
}

func (c *repairConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || !resp.ID.IsValid() {
		return msg, err
	}
	c.mu.Lock()
	method, tracked := c.calls[idKey(resp.ID)]
	delete(c.calls, idKey(resp.ID))
	c.mu.Unlock()
	if !tracked || len(resp.Result) == 0 {
		return msg, err
	}
	// Each check first asks whether the result needs any repair at all, so
	// the common case costs one scan or one decode, not a rewrite.
	switch method {
	case "resources/read":
		if bytes.Contains(resp.Result, []byte(`"blob"`)) && !blobsStandard(resp.Result) {
			resp.Result = repairList(resp.Result, "contents", repairContent)
		}
	case "resources/list":
		if !decodesAs[mcpsdk.ListResourcesResult](resp.Result) {
			resp.Result = repairList(resp.Result, "resources", repairEntry[mcpsdk.Resource]("uri"))
		}
	case "resources/templates/list":
		if !decodesAs[mcpsdk.ListResourceTemplatesResult](resp.Result) {
			resp.Result = repairList(resp.Result, "resourceTemplates", repairEntry[mcpsdk.ResourceTemplate]("uriTemplate"))
		}
	}
	return msg, err
}

// blobsStandard reports whether every blob in a read result is already
// padded standard base64, checked by a scan, without decoding any.
func blobsStandard(raw json.RawMessage) bool {
	var res struct {
		Contents []struct {
			Blob *string `json:"blob"`
		} `json:"contents"`
	}
	if json.Unmarshal(raw, &res) != nil {
		return false
	}
	for _, c := range res.Contents {
		if c.Blob != nil && !isStdBase64(*c.Blob) {
			return false
		}
	}
	return true
}

func isStdBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	pad := len(s) - len(strings.TrimRight(s, "="))
	if pad > 2 {
		return false
	}
	for i := 0; i < len(s)-pad; i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

func decodesAs[T any](raw json.RawMessage) bool {
	var v T
	return json.Unmarshal(raw, &v) == nil
}

// repairList applies fix to each element of the array field of a result
// object, returning raw unchanged when nothing needed fixing or it is not
// the expected shape (the SDK then reports it as it would have).
func repairList(raw json.RawMessage, field string, fix func(map[string]json.RawMessage) bool) json.RawMessage {
	var res map[string]json.RawMessage
	if json.Unmarshal(raw, &res) != nil {
		return raw
	}
	var items []map[string]json.RawMessage
	if json.Unmarshal(res[field], &items) != nil {
		return raw
	}
	changed := false
	for _, it := range items {
		if it != nil && fix(it) {
			changed = true
		}
	}
	if !changed {
		return raw
	}
	b, err := json.Marshal(items)
	if err != nil {
		return raw
	}
	res[field] = b
	out, err := json.Marshal(res)
	if err != nil {
		return raw
	}
	return out
}

// repairContent normalises one content item's blob; it reports whether it
// changed the item.
func repairContent(it map[string]json.RawMessage) bool {
	b, ok := it["blob"]
	if !ok {
		return false
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return markInvalid(it, "blob is not a string")
	}
	data, err := decodeBase64(s)
	if err != nil {
		return markInvalid(it, fmt.Sprintf("blob is not base64: %v", err))
	}
	std := base64.StdEncoding.EncodeToString(data)
	if std == s {
		return false
	}
	it["blob"], _ = json.Marshal(std)
	return true
}

func markInvalid(it map[string]json.RawMessage, why string) bool {
	it["blob"] = json.RawMessage(`""`)
	var meta map[string]any
	_ = json.Unmarshal(it["_meta"], &meta)
	if meta == nil { // absent, null or not an object
		meta = map[string]any{}
	}
	meta[metaInvalid] = why
	it["_meta"], _ = json.Marshal(meta)
	return true
}

// decodeBase64 accepts standard or URL-safe base64, padded or not, with
// line breaks or other whitespace anywhere (RFC 4648 §3.1 and §5; MIME-style
// 76-column lines).
func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\t', '\r', '\n':
			return -1
		}
		return r
	}, s)
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// repairEntry returns a fix for list entries of type T whose identifying
// field is key: an entry that does not decode as T loses the malformed
// optional fields; if it still does not decode, its key is emptied so the
// list walk rejects and reports it.
func repairEntry[T any](key string) func(map[string]json.RawMessage) bool {
	decodes := func(it map[string]json.RawMessage) bool {
		b, err := json.Marshal(it)
		if err != nil {
			return false
		}
		var v T
		dec := json.NewDecoder(bytes.NewReader(b))
		return dec.Decode(&v) == nil
	}
	return func(it map[string]json.RawMessage) bool {
		if decodes(it) {
			return false
		}
		for _, f := range []string{"annotations", "icons", "size", "_meta", "title", "description", "mimeType"} {
			saved, ok := it[f]
			if !ok {
				continue
			}
			delete(it, f)
			if decodes(it) {
				return true
			}
			it[f] = saved
		}
		name := it["name"]
		for f := range it {
			delete(it, f)
		}
		it[key] = json.RawMessage(`""`)
		var s string
		if json.Unmarshal(name, &s) == nil {
			it["name"] = name
		}
		return true
	}
}
