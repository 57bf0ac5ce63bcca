package mcp

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
)

// A List is the result of walking every page of a paginated list.
type List[T any] struct {
	Items []T
	// Pages is the number of list requests sent.
	Pages int
	// Complete is false when the walk stopped early; Incomplete says why.
	Complete   bool
	Incomplete string
	// Capped reports that the walk stopped because it held the most
	// entries it keeps (Options.MaxResources or MaxTemplates, or
	// MaxResourceBytes of descriptor text): Items are the server's first
	// ones, and the rest were not asked for.
	Capped bool
	// Rejected counts entries dropped as malformed (no URI) and Duplicates
	// those whose URI an earlier page already listed; Problems describes the
	// first few of either, naming the page.
	Rejected, Duplicates int
	Problems             []string
}

// maxProblems bounds List.Problems.
const maxProblems = 5

func (l *List[T]) problem(kind *int, format string, args ...any) {
	*kind++
	if len(l.Problems) < maxProblems {
		l.Problems = append(l.Problems, fmt.Sprintf(format, args...))
	}
}

// ListResources walks every page of resources/list. A server without the
// resources capability gets no request: the result is empty and complete.
// A URI listed twice keeps its first descriptor; an entry without a URI is
// dropped. Both are counted and described in the List.
func (s *Session) ListResources(ctx context.Context) (List[resource.Descriptor], error) {
	l, err := s.listResources(ctx)
	if err == nil && s.self != nil && s.self.Load() {
		return List[resource.Descriptor]{}, fmt.Errorf("mcp: server %q: %w (its list names this contextd's process)", s.name, ErrSelf)
	}
	return l, err
}

func (s *Session) listResources(ctx context.Context) (List[resource.Descriptor], error) {
	seen := map[string]bool{}
	return walk(ctx, s, "resources/list", s.opts.MaxResources, s.opts.MaxResourceBytes, resource.Descriptor.TextBytes, func(ctx context.Context, l *List[resource.Descriptor], cursor string) ([]resource.Descriptor, string, error) {
		res, err := s.cs.ListResources(ctx, &mcpsdk.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		var out []resource.Descriptor
		for i, r := range res.Resources {
			switch {
			case r == nil || r.URI == "":
				name := ""
				if r != nil {
					name = clip(r.Name, MaxNameBytes)
				}
				l.problem(&l.Rejected, "page %d, entry %d: no uri (name %q)", l.Pages+1, i, name)
				continue
			case len(r.URI) > MaxURIBytes:
				l.problem(&l.Rejected, "page %d, entry %d: uri of %d bytes (over %d)", l.Pages+1, i, len(r.URI), MaxURIBytes)
				continue
			case hasControl(r.URI):
				l.problem(&l.Rejected, "page %d, entry %d: uri holds a control character (name %q)", l.Pages+1, i, clip(r.Name, MaxNameBytes))
				continue
			case seen[r.URI]:
				l.problem(&l.Duplicates, "page %d: %q listed again; kept the first", l.Pages+1, r.URI)
				continue
			}
			seen[strings.Clone(r.URI)] = true
			out = append(out, descriptor(s.name, r))
		}
		return out, res.NextCursor, nil
	})
}

// ListTemplates walks every page of resources/templates/list, with the same
// capability gate and guards as ListResources. A server that declares
// resources but answers -32601 (method not found) has no templates: the list
// is empty and complete.
func (s *Session) ListTemplates(ctx context.Context) (List[resource.Template], error) {
	return walk(ctx, s, "resources/templates/list", s.opts.MaxTemplates, 0, nil, func(ctx context.Context, l *List[resource.Template], cursor string) ([]resource.Template, string, error) {
		res, err := s.cs.ListResourceTemplates(ctx, &mcpsdk.ListResourceTemplatesParams{Cursor: cursor})
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound {
			return nil, "", nil
		}
		if err != nil {
			return nil, "", err
		}
		var out []resource.Template
		for i, t := range res.ResourceTemplates {
			if t == nil || t.URITemplate == "" {
				l.problem(&l.Rejected, "page %d, entry %d: no uriTemplate", l.Pages+1, i)
				continue
			}
			if len(t.URITemplate) > MaxURIBytes {
				l.problem(&l.Rejected, "page %d, entry %d: uriTemplate of %d bytes (over %d)", l.Pages+1, i, len(t.URITemplate), MaxURIBytes)
				continue
			}
			if hasControl(t.URITemplate) {
				l.problem(&l.Rejected, "page %d, entry %d: uriTemplate holds a control character", l.Pages+1, i)
				continue
			}
			out = append(out, resource.Template{
				Server: s.name, URITemplate: strings.Clone(t.URITemplate), Name: clip(t.Name, MaxNameBytes),
				Title: clip(t.Title, MaxNameBytes), Description: clip(t.Description, MaxDescriptionBytes), MIMEType: clip(t.MIMEType, maxMIMEBytes),
			})
		}
		return out, res.NextCursor, nil
	})
}

// listCacheOff is a client sending middleware that keeps the go-sdk's list
// cache (protocol 2026-07-28) from holding every page a list walk reads:
// the SDK stores each resources/list and resources/templates/list result
// under the request's cursor, whatever its ttlMs, and drops an entry only
// when the same cursor is asked for again (or at list_changed). A walk asks
// for each cursor once, so every page stayed for the session's life: a
// server handing out new cursors at each re-list grew it without bound,
// up to 1,000 pages of max_message_bytes a walk. Here, once the answer is
// in, the request's cursor is cleared, so the SDK stores the page under ""
// (one entry a method, replaced by the next page), and its ttlMs is zeroed,
// so that entry is never served in place of a walk's first page. contextd
// re-lists on its own schedule, and does not use the lists' ttlMs.
func listCacheOff(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		res, err := next(ctx, method, req)
		switch p := req.GetParams().(type) {
		case *mcpsdk.ListResourcesParams:
			if p != nil {
				p.Cursor = ""
			}
			if r, ok := res.(*mcpsdk.ListResourcesResult); ok && r != nil {
				r.TTLMs = 0
			}
		case *mcpsdk.ListResourceTemplatesParams:
			if p != nil {
				p.Cursor = ""
			}
			if r, ok := res.(*mcpsdk.ListResourceTemplatesResult); ok && r != nil {
				r.TTLMs = 0
			}
		}
		return res, err
	}
}

// maxQuotedCursor bounds the cursor a walk's Incomplete quotes, in bytes.
const maxQuotedCursor = 256

// walk follows nextCursor until it is empty, repeats, or the page cap or
// maxItems entries are reached.
func walk[T any](ctx context.Context, s *Session, method string, maxItems, maxBytes int, size func(T) int, page func(context.Context, *List[T], string) ([]T, string, error)) (List[T], error) {
	var l List[T]
	held := 0 // Σ size of l.Items
	if !s.caps.Resources {
		l.Complete = true
		return l, nil
	}
	// Cursors are remembered by a hash: a cursor is the server's to choose,
	// up to max_message_bytes long, and the walk may see MaxPages of them.
	seed := maphash.MakeSeed()
	seen := map[uint64]bool{}
	cursor := ""
	for {
		if l.Pages >= s.opts.MaxPages {
			l.Incomplete = fmt.Sprintf("stopped after %d pages (page cap)", l.Pages)
			return l, nil
		}
		items, next, err := page(ctx, &l, cursor)
		l.Pages++
		if err != nil {
			return l, fmt.Errorf("mcp: server %q: %s (page %d): %w", s.name, method, l.Pages, err)
		}
		if size != nil {
			for i, it := range items {
				if held += size(it); held > maxBytes {
					l.Items = slices.Clip(append(l.Items, items[:i]...))
					l.Capped = true
					l.Incomplete = fmt.Sprintf("stopped at %d entries: the next would pass %d bytes of descriptor text (the most kept per server)", len(l.Items), maxBytes)
					return l, nil
				}
			}
		}
		l.Items = append(l.Items, items...)
		if len(l.Items) > maxItems || (len(l.Items) == maxItems && next != "") {
			l.Items = slices.Clip(l.Items[:maxItems])
			l.Capped = true
			l.Incomplete = fmt.Sprintf("stopped at %d entries (the most kept per server)", maxItems)
			return l, nil
		}
		if next == "" {
			l.Complete = true
			return l, nil
		}
		h := maphash.String(seed, next)
		if seen[h] {
			l.Incomplete = fmt.Sprintf("server repeated cursor %q after %d pages", clipCut(next, maxQuotedCursor), l.Pages)
			return l, nil
		}
		seen[h] = true
		cursor = next
	}
}

// What one listed entry may hold, in bytes. A server's list pages are
// bounded only by max_message_bytes, so without these one server could
// make the daemon keep (and every Search return) megabytes per
// descriptor. A longer URI or URI template drops its entry (Rejected);
// longer text fields are cut at a character boundary.
const (
	MaxURIBytes         = 4096
	MaxNameBytes        = 1024 // name and title
	MaxDescriptionBytes = 4096
	maxMIMEBytes        = 256
	maxLastModified     = 64
	maxAudience         = 4
)

func descriptor(server string, r *mcpsdk.Resource) resource.Descriptor {
	d := resource.Descriptor{
		Server: server, URI: strings.Clone(r.URI), Name: clip(r.Name, MaxNameBytes), Title: clip(r.Title, MaxNameBytes),
		Description: clip(r.Description, MaxDescriptionBytes), MIMEType: clip(r.MIMEType, maxMIMEBytes), Size: r.Size,
	}
	if d.Size < 0 {
		d.Size = 0
	}
	if a := r.Annotations; a != nil {
		for _, role := range a.Audience[:min(len(a.Audience), maxAudience)] {
			d.Audience = append(d.Audience, clip(string(role), maxMIMEBytes))
		}
		if a.Priority >= 0 && a.Priority <= 1 {
			d.Priority = a.Priority
		}
		if isTime(a.LastModified) {
			d.LastModified = clip(a.LastModified, maxLastModified)
		}
	}
	return d
}

// isTime reports whether s reads as the ISO 8601 time lastModified is
// (RFC 3339, with or without a zone, or a date alone). Any other text is
// dropped: a host shows it as a time.
func isTime(s string) bool {
	if len(s) > maxLastModified {
		return false
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", time.DateOnly} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

// clip returns s cut to at most n bytes at a character boundary, as a
// copy, so that a kept field does not pin the whole decoded page.
// clipCut returns s cut as clip does, with redact.Cut where it was cut:
// for text quoted in errors and logs, whose redactor then masks the piece
// of a secret the cut may have left.
func clipCut(s string, n int) string {
	if len(s) <= n {
		return strings.Clone(s)
	}
	return clip(s, n) + redact.Cut
}

// clipBytes is clipCut of data.
func clipBytes(data []byte, n int) string {
	return clipCut(string(data[:min(len(data), n+1)]), n)
}

func clip(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n]
	}
	return strings.Clone(s)
}

// hasControl reports whether a URI (or URI template) holds an ASCII control
// character, which no URI may (RFC 3986 §2): a NUL, a newline. Such an
// entry could not be stored in a shared store, nor read back as listed.
func hasControl(uri string) bool {
	return strings.ContainsFunc(uri, func(r rune) bool { return r < 0x20 || r == 0x7f })
}
