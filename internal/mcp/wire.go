package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/jsonscan"
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
//   - all three: the caching hints (ttlMs, cacheScope; MCP draft, Server
//     Utilities > Caching) are advisory, so a malformed one must not cost
//     the result: see repairHints.
type repairTransport struct {
	base    mcpsdk.Transport
	listens *listenTracker // nil: not tracked
	log     *slog.Logger   // nil: no warnings
	self    *atomic.Bool   // set when a list answer holds this process's instance name; may be nil
}

func (t repairTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	c, err := t.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	rc := &repairConn{Connection: c, calls: map[string]string{}, listens: t.listens, log: t.log, self: t.self, answers: make(chan struct{}, MaxAnswersInFlight)}
	rc.closing, rc.stopAnswers = context.WithCancel(context.Background())
	if _, ok := t.base.(*mcpsdk.StreamableClientTransport); ok {
		rc.side = newStandaloneStream()
		rc.pumped = make(chan pumped)
		rc.pumpCtx, rc.stopPump = context.WithCancel(context.Background())
		rc.pumping.Go(rc.pump)
	}
	if t.listens != nil {
		t.listens.conn = rc
	}
	return rc, nil
}

type repairConn struct {
	mcpsdk.Connection

	listens *listenTracker // subscriptions/listen streams, or nil
	self    *atomic.Bool   // see repairTransport; may be nil

	log     *slog.Logger  // may be nil
	answers chan struct{} // a slot per answer being written
	dropped warnLimit     // answers dropped because every slot was taken
	bulky   warnLimit     // params dropped for holding too many values

	// closing ends when the session begins to close: answers being
	// written are abandoned (the go-sdk waits for them before it closes),
	// and later ones are dropped.
	closing     context.Context
	stopAnswers context.CancelFunc

	mu    sync.Mutex
	calls map[string]string // request ID → method, for calls awaiting an answer

	// Streamable HTTP only (nil otherwise): Read takes messages from the
	// connection (read by the pump goroutine) and from the standalone
	// stream, which Session opens after initialize on sessions before
	// 2026-07-28.
	side     *standaloneStream
	pumped   chan pumped
	pumping  sync.WaitGroup
	pumpCtx  context.Context // ends at Close
	stopPump context.CancelFunc
}

// pumped is one result of the connection's Read.
type pumped struct {
	msg jsonrpc.Message
	err error
}

// pump reads the connection for next until the connection fails or
// Close.
func (c *repairConn) pump() {
	for {
		msg, err := c.Connection.Read(c.pumpCtx)
		select {
		case c.pumped <- pumped{msg, err}:
		case <-c.pumpCtx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// next returns the next message from the connection or, on Streamable
// HTTP, from the standalone stream as well. The connection's errors (EOF
// after Close) are returned as they come; a standalone stream that could
// not be re-established fails the read for good, which ends the session.
func (c *repairConn) next(ctx context.Context) (jsonrpc.Message, error) {
	if c.side == nil {
		return c.Connection.Read(ctx)
	}
	select {
	case p := <-c.pumped:
		return p.msg, p.err
	case msg := <-c.side.msgs:
		return msg, nil
	case <-c.side.dead:
		return nil, c.side.err
	case <-c.pumpCtx.Done():
		return nil, io.EOF // closed: the pump may have stopped before it passed on the connection's EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close closes the connection and ends the standalone stream and the pump.
func (c *repairConn) Close() error {
	err := c.Connection.Close()
	if c.side != nil {
		c.stopPump()
		c.side.stop()
		c.pumping.Wait()
	}
	return err
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

// Bounds on the answers contextd writes to a server's own requests (ping;
// it offers no roots, sampling or elicitation, so the rest are refusals).
// The go-sdk handles each request from the server on a goroutine of its
// own that holds the request until its answer is written, writes the
// answer with no deadline (over Streamable HTTP, a POST of its own), and
// waits for those writes when the session closes. So a server that sends
// requests and never takes the answers (holds the POSTs open, or stops
// reading its stdin) would make contextd hold a connection, a goroutine
// and the request per request it sent, and make closing the session wait
// for good. At most MaxAnswersInFlight answers are written at once, each
// for at most AnswerWriteTimeout; an answer that finds every slot taken
// for answerSlotWait is dropped (the server's request goes unanswered)
// and logged at most once a second. (Answers that are written at once,
// such as those the go-sdk gathers for a batch over stdio, free their
// slots within the wait.)
const (
	MaxAnswersInFlight = 8
	AnswerWriteTimeout = 10 * time.Second
	answerSlotWait     = 100 * time.Millisecond
)

// answerSlot takes one of the answer slots, waiting answerSlotWait at most,
// and reports whether it did.
func (c *repairConn) answerSlot() bool {
	select {
	case c.answers <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(answerSlotWait)
	defer t.Stop()
	select {
	case c.answers <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-c.closing.Done():
		return false
	}
}

func (c *repairConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok && c.answers != nil {
		if c.closing.Err() != nil {
			return nil
		}
		if !c.answerSlot() {
			if ok, n := c.dropped.allow(); ok && c.log != nil {
				c.log.Warn("the server does not take contextd's answers to its requests: an answer dropped", "id", clipCut(fmt.Sprint(resp.ID.Raw()), 64), "also_dropped", n)
			}
			return nil // an error here would end the session
		}
		defer func() { <-c.answers }()
		// A write cut short by this deadline fails as a request the
		// transport could not send: the session stays up.
		wctx, cancel := context.WithTimeout(ctx, AnswerWriteTimeout)
		defer cancel()
		defer context.AfterFunc(c.closing, cancel)()
		return c.Connection.Write(wctx, msg)
	}
	var tracked string
	if req, ok := msg.(*jsonrpc.Request); ok {
		if c.listens != nil {
			c.listens.sent(req)
		}
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
	read := func() (jsonrpc.Message, error) {
		msg, err := c.next(ctx)
		if err != nil {
			return msg, err
		}
		switch m := msg.(type) {
		case *jsonrpc.Response:
			clipError(m) // before the listen tracker keeps it
			c.mu.Lock()
			_, tracked := c.calls[idKey(m.ID)]
			c.mu.Unlock()
			if !tracked && len(m.Result) > 0 {
				m.Result = dropUnread(m.Result, "")
				if jsonscan.Values(m.Result, MaxReadValues) > MaxReadValues {
					m.Result = nil
					m.Error = &jsonrpc.Error{Code: codeTooLarge, Message: fmt.Sprintf("the result holds more than %d JSON values: not decoded", MaxReadValues)}
				}
			}
		case *jsonrpc.Request:
			refuseUnanswered(m)
			if jsonscan.Values(m.Params, MaxParamsValues) > MaxParamsValues {
				if ok, n := c.bulky.allow(); ok && c.log != nil {
					c.log.Warn("the server sent a message whose params hold too many JSON values: its params dropped", "method", clipCut(m.Method, 64), "max_values", MaxParamsValues, "also_dropped", n)
				}
				m.Params = json.RawMessage(`{}`)
			}
		}
		return msg, err
	}
	msg, err := read()
	if err == nil && c.listens != nil {
		c.listens.received(msg)
		for err == nil && ourListen(msg) {
			// The answer to a listen contextd wrote: not the go-sdk's.
			msg, err = read()
			if err == nil {
				c.listens.received(msg)
			}
		}
	}
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
	if c.self != nil && method == "resources/list" && bytes.Contains(resp.Result, []byte(instance)) && namesInstance(resp.Result) {
		// contextd's own MCP server names its process in each entry's
		// _meta: a bridge that rewrites URIs, or answers initialize
		// itself, still passes the entries on.
		c.self.Store(true)
	}
	// Each check first asks whether the result needs any repair at all, so
	// the common case costs one scan or one decode, not a rewrite.
	resp.Result = dropUnread(resp.Result, method)
	if !boundValues(resp, method) {
		return msg, err
	}
	resp.Result = repairHints(resp.Result)
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

// MaxResultValues bounds the JSON values of one resources/list or
// resources/templates/list result that the go-sdk decodes, counted as the
// objects and arrays it opens and the commas between their members and
// elements. The go-sdk decodes a result whole
// into Go values that cost far more than their text: a 16 MiB read
// result of empty items ("contents":[{},{},…]) held about 1.2 GB while it
// was decoded, and a server answering every read so (the content pass
// reads in the background) kept the daemon at 2.3 GB. A result over the
// bound keeps the entries of its list (resources, resourceTemplates or
// contents) that fit, and ends it with one that says how many were not
// read: a list entry without a URI (rejected and reported by the walk),
// or a content item marked unusable; a result whose values outside that
// list alone pass the bound fails its call. A list entry takes 3 to 8
// values, so about 100,000 fit; the decoded result then takes at most
// about 60 MB. Reads and other calls have a tighter bound, MaxReadValues.
// Values the go-sdk would decode into interface values are dropped first
// (see dropUnread).
const MaxResultValues = 1 << 19

// MaxReadValues is MaxResultValues for a resources/read result and for the
// result of any call other than a list (initialize, subscribe, complete,
// …; over it, such a call fails). A read result holds a resource's
// contents: one item, or a few, each taking 3 to 6 values whatever the
// size of its text or blob, so about 10,000 items fit. A read result of
// empty items within MaxResultValues still took about 30 MB once decoded,
// and the content pass and the ranking reads keep several in flight per
// server.
const MaxReadValues = 1 << 16

// MaxParamsValues bounds, as MaxResultValues does, the params of a request
// or notification from the server; over it, they are dropped (replaced by
// an empty object) before the go-sdk decodes them. The go-sdk decodes every
// notification's params whatever it does with them (a log message's data,
// which contextd does not read), one notification at a time, while its
// reader queues the next without bound: a flood of 16 MiB
// notifications/message of empty objects took the daemon past 1.6 GB. What
// contextd reads of a server's messages (a URI updated, the URIs a
// subscription honours, a request to cancel) takes a few dozen values.
const MaxParamsValues = 1 << 12

// boundValues applies MaxResultValues (MaxReadValues to a read) to the
// answer of a call of method, and reports whether the answer still has a
// result to repair.
func boundValues(resp *jsonrpc.Response, method string) bool {
	raw := resp.Result
	limit := MaxResultValues
	if method == "resources/read" {
		limit = MaxReadValues
	}
	if jsonscan.Values(raw, limit) <= limit {
		return true
	}
	var field, entry string
	switch method {
	case "resources/read":
		field = "contents"
		entry = `{"uri":"","text":"","_meta":{"` + metaInvalid + `":%s}}`
	case "resources/list":
		field, entry = "resources", `{"uri":"","name":%s}`
	case "resources/templates/list":
		field, entry = "resourceTemplates", `{"uriTemplate":"","name":%s}`
	}
	var list []byte
	topMembers(raw, func(name, val []byte) {
		if string(name) == `"`+field+`"` && len(val) > 0 && val[0] == '[' {
			list = val
		}
	})
	outside := -1
	if list != nil {
		outside = jsonscan.Values(raw, len(raw)) - jsonscan.Values(list, len(list))
	}
	if outside < 0 || outside >= limit {
		resp.Result = nil
		resp.Error = &jsonrpc.Error{Code: codeTooLarge, Message: fmt.Sprintf("the result holds more than %d JSON values: not decoded", limit)}
		return false
	}
	// Keep the elements that fit, counting each with its comma.
	budget := limit - outside - 1
	kept, dropped, end := 0, 0, 1 // end: just past the last element kept
	for i := skipSpace(list, 1); i < len(list) && list[i] != ']'; {
		j := endOfValue(list, i)
		if j < 0 {
			return true // not JSON: the go-sdk reports it
		}
		if n := jsonscan.Values(list[i:j], j-i) + 1; dropped == 0 && n <= budget {
			budget -= n
			kept, end = kept+1, j
		} else {
			dropped++
		}
		i = skipSpace(list, j)
		if i < len(list) && list[i] == ',' {
			i = skipSpace(list, i+1)
		}
	}
	why, _ := json.Marshal(fmt.Sprintf("%d entries not read: the result holds more than %d JSON values", dropped, limit))
	start := cap(raw) - cap(list) // list's offset in raw
	out := make([]byte, 0, start+end+len(entry)+len(why)+len(raw)-start-len(list)+2)
	out = append(out, raw[:start+end]...)
	if kept > 0 {
		out = append(out, ',')
	}
	out = fmt.Appendf(out, entry, why)
	out = append(out, ']')
	out = append(out, raw[start+len(list):]...)
	resp.Result = out
	return true
}

// dropUnread removes from a result the members the go-sdk would decode
// into interface values and contextd never reads. From a resources/read,
// resources/list or resources/templates/list result (method): _meta, at
// the top level and in each entry of its list (contents, resources or
// resourceTemplates), and a read's inputRequests (contextd answers none;
// resultType alone says input is required). From any other call's result
// (method ""): the members of a top-level _meta other than
// io.modelcontextprotocol/serverInfo (which the go-sdk reads from a
// server/discover result) and InstanceMetaKey (see isSelf), and the experimental and extensions members of
// a top-level capabilities object (an initialize or discover result's,
// which initializeBounds drops after decoding anyway). Values decoded into
// an interface cost far more than their text and than the same values in
// a typed field: a read result of 0.5 MB whose _meta held 261,000 empty
// arrays, within MaxResultValues, took about 58 MB once decoded, and a
// server answering every read so held the daemon at 400–500 MB while the
// content pass read it. Names are matched as the go-sdk's decoder matches
// them: unescaped, case-sensitive. A result with none of these names is
// returned as it is after a byte search, one that has them after a few
// scans (and one copy if a member goes); one that is not an object, or a
// list that is not an array, is left for the go-sdk to report.
func dropUnread(raw json.RawMessage, method string) json.RawMessage {
	var field string
	switch method {
	case "resources/read":
		field = "contents"
	case "resources/list":
		field = "resources"
	case "resources/templates/list":
		field = "resourceTemplates"
	}
	if !bytes.Contains(raw, []byte("_meta")) && !bytes.Contains(raw, []byte(`\u`)) &&
		(method != "resources/read" || !bytes.Contains(raw, []byte("inputRequests"))) &&
		(field != "" || !bytes.Contains(raw, []byte("experimental")) && !bytes.Contains(raw, []byte("extensions"))) {
		return raw // none of the names, not even escaped
	}
	out, _ := dropMembers(raw, func(name []byte) bool {
		return field != "" && string(name) == "_meta" || method == "resources/read" && string(name) == "inputRequests"
	}, func(name, val []byte) []byte {
		var drop func([]byte) bool
		switch {
		case len(val) == 0:
			return nil
		case field != "" && string(name) == field && val[0] == '[':
			return dropInEntries(val)
		case field == "" && string(name) == "_meta":
			drop = func(name []byte) bool {
				return string(name) != mcpsdk.MetaKeyServerInfo && string(name) != InstanceMetaKey
			}
		case field == "" && string(name) == "capabilities":
			drop = func(name []byte) bool { return string(name) == "experimental" || string(name) == "extensions" }
		default:
			return nil
		}
		if v, ok := dropMembers(val, drop, nil); ok {
			return v
		}
		return nil
	})
	return out
}

// isMeta reports whether a member's unescaped name is _meta.
func isMeta(name []byte) bool { return string(name) == "_meta" }

// dropInEntries returns the JSON array list with _meta removed from each
// of its object elements, or nil when there was none to remove. It
// allocates nothing per element that keeps its members.
func dropInEntries(list []byte) []byte {
	var out []byte // nil until an element changes
	copied := 0    // list[:copied] is in out
	for i := skipSpace(list, 1); i < len(list) && list[i] != ']'; {
		j := endOfValue(list, i)
		if j < 0 {
			return nil // not JSON: the go-sdk reports it
		}
		if e, ok := dropMembers(list[i:j], isMeta, nil); ok {
			if out == nil {
				out = make([]byte, 0, len(list))
			}
			out = append(out, list[copied:i]...)
			out = append(out, e...)
			copied = j
		}
		i = skipSpace(list, j)
		if i < len(list) && list[i] == ',' {
			i = skipSpace(list, i+1)
		}
	}
	if out == nil {
		return nil
	}
	return append(out, list[copied:]...)
}

// memberName returns a member's name as written (quotes included),
// unescaped; nil if it does not unescape.
func memberName(raw []byte) []byte {
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1]
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	return []byte(s)
}

// dropMembers rewrites the JSON object obj without the members whose
// unescaped names drop accepts, and with the value of each member for
// which edit (which may be nil) returns non-nil replaced by what it
// returns. It reports whether anything changed; if not, or obj is not an
// object, it returns obj as it is. Without edit, an object it leaves as it
// is costs one scan and no allocation for names without escapes.
func dropMembers(obj []byte, drop func(name []byte) bool, edit func(name, val []byte) []byte) ([]byte, bool) {
	if edit == nil {
		hit := false
		topMembers(obj, func(rawName, _ []byte) {
			hit = hit || drop(memberName(rawName))
		})
		if !hit {
			return obj, false
		}
	}
	type member struct{ name, val []byte }
	var kept []member
	changed := false
	ok := topMembers(obj, func(rawName, val []byte) {
		name := memberName(rawName)
		if drop(name) {
			changed = true
			return
		}
		if edit != nil {
			if v := edit(name, val); v != nil {
				val, changed = v, true
			}
		}
		kept = append(kept, member{rawName, val})
	})
	if !ok || !changed {
		return obj, false
	}
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	for k, m := range kept {
		if k > 0 {
			out = append(out, ',')
		}
		out = append(out, m.name...)
		out = append(out, ':')
		out = append(out, m.val...)
	}
	return append(out, '}'), true
}

// MaxErrorMessageBytes bounds the message of an error a server answers a
// call with (cut at a character boundary), and its data (dropped past it).
// The message reaches callers in omitted details and ListServers.last_error,
// one per failed read, so without a bound one server could make every
// Assemble answer carry up to 64 reads × max_message_bytes of it.
const MaxErrorMessageBytes = 1024

// clipError bounds resp's error, if it has one, and reports whether it
// changed it.
func clipError(resp *jsonrpc.Response) bool {
	var we *jsonrpc.Error
	if !errors.As(resp.Error, &we) || (len(we.Message) <= MaxErrorMessageBytes && len(we.Data) <= MaxErrorMessageBytes) {
		return false
	}
	c := &jsonrpc.Error{Code: we.Code, Message: we.Message, Data: we.Data}
	if len(c.Message) > MaxErrorMessageBytes {
		c.Message = clipCut(c.Message, MaxErrorMessageBytes)
	}
	if len(c.Data) > MaxErrorMessageBytes {
		c.Data = nil
	}
	resp.Error = c
	return true
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

// repairHints makes a result's caching hints decode, erring towards not
// caching. The go-sdk decodes ttlMs as an int and cacheScope as a string
// and fails the whole result on anything else (1.5, "60000", true, 1e308; 5,
// ["public"]), so:
//
//   - a ttlMs that is not a JSON integer within int is dropped: the result
//     is "immediately stale", read and not kept by TTL;
//   - a cacheScope that is neither a string nor null becomes "private": the
//     result is read and never shared, even under a subscription (where an
//     absent scope would let it be cached);
//   - a member that appears more than once (the SDK keeps the last) is kept
//     only if every occurrence is the same valid value; otherwise ttlMs is
//     dropped and cacheScope becomes "private", whatever the order.
//
// The common case, each hint once and well-formed or absent, costs one scan
// of the result that decodes nothing but the hints themselves, and no
// rewrite.
func repairHints(raw json.RawMessage) json.RawMessage {
	var ttls, scopes [][]byte
	ok := topMembers(raw, func(name []byte, val []byte) {
		switch {
		case string(name) == `"ttlMs"`:
			ttls = append(ttls, val)
		case string(name) == `"cacheScope"`:
			scopes = append(scopes, val)
		case bytes.IndexByte(name, '\\') >= 0:
			// An escaped name, as the SDK's decoder unescapes it.
			var s string
			if json.Unmarshal(name, &s) != nil {
				return
			}
			switch s {
			case "ttlMs":
				ttls = append(ttls, val)
			case "cacheScope":
				scopes = append(scopes, val)
			}
		}
	})
	if !ok {
		return raw // not an object: the SDK reports it as it would have
	}
	ttl, ttlFix := resolveTTL(ttls)
	scope, scopeFix := resolveScope(scopes)
	if !ttlFix && !scopeFix {
		return raw
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(raw, &res) != nil {
		return raw
	}
	if ttlFix {
		if ttl == nil {
			delete(res, "ttlMs")
		} else {
			res["ttlMs"] = ttl
		}
	}
	if scopeFix {
		res["cacheScope"] = scope
	}
	out, err := json.Marshal(res)
	if err != nil {
		return raw
	}
	return out
}

// resolveTTL decides the ttlMs of a result from its occurrences: fix is
// false when they need no change (none, or every one the same integer);
// otherwise val is the one to put in their place, nil to drop them.
func resolveTTL(vals [][]byte) (val json.RawMessage, fix bool) {
	if len(vals) == 0 {
		return nil, false
	}
	for _, v := range vals {
		if !isJSONInt(v) || !bytes.Equal(v, vals[0]) {
			return nil, true
		}
	}
	return nil, false // the SDK reads the one value there is
}

// isJSONInt reports whether v is a JSON number without fraction or
// exponent that fits an int (the go-sdk's type for ttlMs).
func isJSONInt(v []byte) bool {
	s := string(v)
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 1 && digits[0] == '0' {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseInt(s, 10, strconv.IntSize)
	return err == nil
}

// resolveScope decides the cacheScope of a result from its occurrences, as
// resolveTTL does; when they need a fix it is "private".
func resolveScope(vals [][]byte) (val json.RawMessage, fix bool) {
	if len(vals) == 0 {
		return nil, false
	}
	private := json.RawMessage(`"private"`)
	var first *string
	for i, v := range vals {
		var s *string // nil for null
		if len(v) == 0 || v[0] != '"' && !bytes.Equal(v, []byte("null")) || json.Unmarshal(v, &s) != nil {
			return private, true
		}
		if i == 0 {
			first = s
		} else if (s == nil) != (first == nil) || s != nil && *s != *first {
			return private, true
		}
	}
	return nil, false
}

// errBadID is decodeMessage's error for a message whose id is not a
// string, a number or null, or that names its id more than once.
var errBadID = errors.New("the message's id is not a string, a number or null")

// badID reports whether the JSON-RPC message msg has an "id" member (as
// encoding/json matches names: unescaped, in any case) whose value is not a
// string, a number or null, or more than one such member. The go-sdk
// decodes an id into an interface value before it rejects one of another
// type (and the last of repeated members wins), so an id of millions of
// empty arrays costs gigabytes once decoded while its bytes pass every
// bound; such a message must not reach a decoder. Only the top level is
// delimited, nothing is decoded but member names with escapes.
func badID(msg []byte) bool {
	ids, bad := 0, false
	topMembers(msg, func(name, val []byte) {
		n := string(name[1 : len(name)-1])
		if bytes.IndexByte(name, '\\') >= 0 && json.Unmarshal(name, &n) != nil {
			return
		}
		if !strings.EqualFold(n, "id") {
			return
		}
		ids++
		if len(val) == 0 || !(val[0] == '"' || val[0] == '-' || val[0] >= '0' && val[0] <= '9' || bytes.Equal(val, []byte("null"))) {
			bad = true
		}
	})
	return bad || ids > 1
}

// decodeMessage is jsonrpc.DecodeMessage for bytes a server sent, refusing
// a message with a bad id (badID) before it is decoded.
func decodeMessage(data []byte) (jsonrpc.Message, error) {
	if badID(data) {
		return nil, errBadID
	}
	return jsonrpc.DecodeMessage(data)
}

// topMembers calls f with the name (as written, quotes included) and the
// value (as written) of each member of the JSON object raw, in order, without
// decoding anything. It reports false if raw is not an object; values are
// only delimited, not checked (the SDK's decoder reports bad JSON).
func topMembers(raw []byte, f func(name, val []byte)) bool {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return true
	}
	for {
		if i >= len(raw) || raw[i] != '"' {
			return false
		}
		end := endOfString(raw, i)
		if end < 0 {
			return false
		}
		name := raw[i:end]
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return false
		}
		i = skipSpace(raw, i+1)
		end = endOfValue(raw, i)
		if end < 0 {
			return false
		}
		f(name, raw[i:end])
		i = skipSpace(raw, end)
		if i >= len(raw) {
			return false
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case '}':
			return true
		default:
			return false
		}
	}
}

func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\r' || raw[i] == '\n') {
		i++
	}
	return i
}

// endOfString returns the index just past the string starting at raw[i]
// (a '"'), or -1.
func endOfString(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// endOfValue returns the index just past the value starting at raw[i], or -1.
func endOfValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		return endOfString(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end := endOfString(raw, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(raw) && !strings.ContainsRune(",}] \t\r\n", rune(raw[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// namesInstance reports whether a resources/list result has an entry whose
// _meta names this process under InstanceMetaKey: only there, not in a
// title or description anyone may write.
func namesInstance(result []byte) bool {
	var l struct {
		Resources []struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"resources"`
	}
	if json.Unmarshal(result, &l) != nil {
		return false
	}
	for _, r := range l.Resources {
		var v string
		if json.Unmarshal(r.Meta[InstanceMetaKey], &v) == nil && v == instance {
			return true
		}
	}
	return false
}
