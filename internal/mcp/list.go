package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

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
	// entries it keeps (Options.MaxResources or MaxTemplates): Items are
	// the server's first ones, and the rest were not asked for.
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
	seen := map[string]bool{}
	return walk(ctx, s, "resources/list", s.opts.MaxResources, func(ctx context.Context, l *List[resource.Descriptor], cursor string) ([]resource.Descriptor, string, error) {
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
					name = r.Name
				}
				l.problem(&l.Rejected, "page %d, entry %d: no uri (name %q)", l.Pages+1, i, name)
				continue
			case seen[r.URI]:
				l.problem(&l.Duplicates, "page %d: %q listed again; kept the first", l.Pages+1, r.URI)
				continue
			}
			seen[r.URI] = true
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
	return walk(ctx, s, "resources/templates/list", s.opts.MaxTemplates, func(ctx context.Context, l *List[resource.Template], cursor string) ([]resource.Template, string, error) {
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
			out = append(out, resource.Template{
				Server: s.name, URITemplate: t.URITemplate, Name: t.Name,
				Title: t.Title, Description: t.Description, MIMEType: t.MIMEType,
			})
		}
		return out, res.NextCursor, nil
	})
}

// walk follows nextCursor until it is empty, repeats, or the page cap or
// maxItems entries are reached.
func walk[T any](ctx context.Context, s *Session, method string, maxItems int, page func(context.Context, *List[T], string) ([]T, string, error)) (List[T], error) {
	var l List[T]
	if !s.caps.Resources {
		l.Complete = true
		return l, nil
	}
	seen := map[string]bool{}
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
		if seen[next] {
			l.Incomplete = fmt.Sprintf("server repeated cursor %q after %d pages", next, l.Pages)
			return l, nil
		}
		seen[next] = true
		cursor = next
	}
}

func descriptor(server string, r *mcpsdk.Resource) resource.Descriptor {
	d := resource.Descriptor{
		Server: server, URI: r.URI, Name: r.Name, Title: r.Title,
		Description: r.Description, MIMEType: r.MIMEType, Size: r.Size,
	}
	if d.Size < 0 {
		d.Size = 0
	}
	if a := r.Annotations; a != nil {
		for _, role := range a.Audience {
			d.Audience = append(d.Audience, string(role))
		}
		if a.Priority >= 0 && a.Priority <= 1 {
			d.Priority = a.Priority
		}
		d.LastModified = a.LastModified
	}
	return d
}
