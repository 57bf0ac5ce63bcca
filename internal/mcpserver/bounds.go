package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/jsonscan"
)

// MaxRequestValues bounds the JSON values of one Streamable HTTP request
// body, counted as the objects and arrays it opens and the commas between
// their members and elements: a larger one is refused with 413. The go-sdk
// decodes _meta, capabilities and other open-ended fields into Go maps and
// slices, which cost far more than their text: a 1 MiB body of empty
// objects ("[{},{},…]") held about 45 MB, each decoding took a quarter of
// a second of CPU, and an initialize keeps its capabilities for the
// session's life (256 sessions of them: 12 GB). A host's requests hold a
// few dozen values; pins count one each.
const MaxRequestValues = 16 << 10

// MaxSessionStartBytes bounds the body of a POST without a session ID
// (an initialize, which starts a session): a larger one is refused with
// 413. The go-sdk keeps an initialize's params, as sent, for the
// session's life; a host's is a few hundred bytes.
const MaxSessionStartBytes = 64 << 10

// MaxBatch bounds the messages of one JSON-RPC batch (a POST body that is
// an array, which protocol 2025-03-26 allows; 2025-06-18 dropped batches):
// a larger one is refused with 400. Each message of a batch is handled on
// a goroutine of its own, outside the admission, and their answers wait for
// the POST's stream in turn, each encoded whole: one POST of 4,000
// resources/list (225 KB) cost 50 s of CPU, and a client that did not
// read held every page it asked for (16 each on 200 connections: +350 MB
// of heap). With one message a POST, a connection holds at most one
// answer. Clients send one message a POST (the TypeScript, Python and Go
// SDKs do).
const MaxBatch = 1

// SmallBody is how much of each request body is read without counting
// against maxLargeBodyBytes: every request a host sends fits.
const SmallBody = 64 << 10

// maxLargeBodyBytes bounds the bytes past SmallBody of the request bodies
// being read or handled at once, together (a variable for tests). Each
// connection may send MaxRequestBytes within handshake_timeout, and a
// body is held whole until its request is done: 900 connections trickling
// 1 MiB bodies took the heap up 810 MB and RSS 1.5 GB, and a client can
// repeat it for as long as it likes.
var maxLargeBodyBytes int64 = 64 << 20

// errBodiesBusy is readBody's error when the large bodies being read add
// up to maxLargeBodyBytes.
var errBodiesBusy = errors.New("busy")

// readBody reads r whole, at most limit bytes (an *http.MaxBytesError
// past it), counting in held the capacity it takes past SmallBody; it
// fails with errBodiesBusy when held would pass maxLargeBodyBytes. It
// returns the body and what it added to held, to take back when the
// request is done (also on error).
func readBody(r io.Reader, limit int64, held *atomic.Int64) (body []byte, counted int64, err error) {
	buf := make([]byte, 0, 4<<10)
	for {
		if len(buf) == cap(buf) {
			size := min(2*int64(cap(buf)), limit+1)
			if extra := max(size-SmallBody, 0) - counted; extra > 0 {
				counted += extra
				if held.Add(extra) > maxLargeBodyBytes {
					return nil, counted, errBodiesBusy
				}
			}
			buf = append(make([]byte, 0, size), buf...)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, counted, nil
		}
		if err != nil {
			return nil, counted, err
		}
	}
}

// boundBodies returns h with POST bodies over MaxRequestBytes (a POST
// starting a session: MaxSessionStartBytes) or MaxRequestValues refused
// (413), batches of more than MaxBatch messages (400), and bodies that
// would take the large bodies being read or handled past
// maxLargeBodyBytes (503, the connection closed), before the go-sdk
// decodes them. The body read is in the request's context (bodyKey).
func boundBodies(h http.Handler) http.Handler {
	var held atomic.Int64 // see maxLargeBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			h.ServeHTTP(w, r)
			return
		}
		limit := int64(MaxRequestBytes)
		if r.Header.Get("Mcp-Session-Id") == "" {
			limit = MaxSessionStartBytes
		}
		body, counted, err := readBody(http.MaxBytesReader(w, r.Body, limit), limit, &held)
		defer held.Add(-counted)
		var tooBig *http.MaxBytesError
		switch {
		case errors.Is(err, errBodiesBusy):
			// Read no more of it: the connection is closed.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now())
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("Service Unavailable: busy: request bodies over %d KiB add up to %d MiB being read; retry later", SmallBody>>10, maxLargeBodyBytes>>20), http.StatusServiceUnavailable)
			return
		case errors.As(err, &tooBig):
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body is over %d bytes", limit), http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "Bad Request: reading the body: "+err.Error(), http.StatusBadRequest)
			return
		case jsonscan.Values(body, MaxRequestValues) > MaxRequestValues:
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body holds over %d JSON values", MaxRequestValues), http.StatusRequestEntityTooLarge)
			return
		case jsonscan.Elements(body, MaxBatch) > MaxBatch:
			http.Error(w, fmt.Sprintf("Bad Request: a JSON-RPC batch may hold at most %d message; send one a POST", MaxBatch), http.StatusBadRequest)
			return
		}
		if problem := idProblem(body); problem != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": "contextd: " + problem}})
			w.Write(answer) //nolint:errcheck // the caller may be gone
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, body))
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// idProblem returns what is wrong with the id of a message of body (a
// message or a batch of them), "" when nothing is or body does not decode
// (the go-sdk answers that). The go-sdk would answer an id it reads
// inexactly (2^53+1, 1.5) under another id.
func idProblem(body []byte) string {
	var msgs []json.RawMessage
	if err := json.Unmarshal(body, &msgs); err != nil {
		msgs = []json.RawMessage{body}
	}
	for _, m := range msgs {
		var fields map[string]json.RawMessage // by exact name, as the go-sdk reads them
		if json.Unmarshal(m, &fields) != nil {
			continue
		}
		if _, problem := checkID(fields["id"]); problem != "" {
			return problem
		}
	}
	return ""
}

// bodyKey is the context key of a POST's body, as boundBodies read it.
type bodyKey struct{}

// maxClientInfoBytes bounds each string of an initialize's clientInfo that
// a session keeps.
const maxClientInfoBytes = 256

// trimInitialize drops from an initialize request what the session would
// keep for its life and contextd never reads: the client's experimental
// capabilities and extension settings (open-ended JSON), the request's
// _meta and clientInfo's icons, and it cuts clientInfo's strings to
// maxClientInfoBytes, each string copied out of the request. The go-sdk
// keeps the params as they were sent, so each of MaxSessions sessions
// could otherwise hold what a request body can carry (a 1 MiB body of
// empty objects: about 45 MB).
func trimInitialize(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if p, ok := req.GetParams().(*mcpsdk.InitializeParams); ok && p != nil {
			p.Meta = nil
			p.ProtocolVersion = cut(p.ProtocolVersion)
			if c := p.Capabilities; c != nil {
				c.Experimental = nil
				if len(c.Extensions) > 0 {
					// Which extensions the client names is kept, not their
					// settings.
					names := map[string]any{}
					for name := range c.Extensions {
						if len(names) == 16 {
							break
						}
						names[cut(name)] = map[string]any{}
					}
					c.Extensions = names
				}
			}
			if ci := p.ClientInfo; ci != nil {
				ci.Icons = nil
				ci.Name, ci.Title, ci.Description = cut(ci.Name), cut(ci.Title), cut(ci.Description)
				ci.Version, ci.WebsiteURL = cut(ci.Version), cut(ci.WebsiteURL)
			}
		}
		return next(ctx, method, req)
	}
}

// cut returns s cut to maxClientInfoBytes, as a copy: the go-sdk's JSON
// decoder returns strings that share the memory of the request's params,
// so keeping even a short one keeps the whole body it came in.
func cut(s string) string {
	return strings.Clone(s[:min(len(s), maxClientInfoBytes)])
}
