package mcpserver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/selector"
)

// AssembleInput is the input of the assemble_context tool.
type AssembleInput struct {
	Task          string   `json:"task" jsonschema:"the task or question to gather context for, in plain words (e.g. how does the billing service retry failed payments)"`
	Budget        int      `json:"budget,omitempty" jsonschema:"the most tokens (cl100k_base unless contextd is configured otherwise) the returned contents may take together; default 2000"`
	Servers       []string `json:"servers,omitempty" jsonschema:"only rank resources of these configured upstream server names (default: all)"`
	MIMETypes     []string `json:"mime_types,omitempty" jsonschema:"only rank resources of these media types, e.g. text/markdown or text/* (default: all)"`
	URIPrefixes   []string `json:"uri_prefixes,omitempty" jsonschema:"only rank resources whose upstream URI starts with one of these, e.g. file:///repo/docs/ (default: all)"`
	Pins          []string `json:"pins,omitempty" jsonschema:"contextd:resource/... URIs to return first, in this order, e.g. the file the user has open; they count against the budget"`
	IncludeBinary bool     `json:"include_binary,omitempty" jsonschema:"also return binary resources (as blobs, costing the tokens of their base64); default false"`
}

// AssembleOutput is the structured content of assemble_context: what was
// returned (the texts themselves are the embedded resources of the result's
// content) and what was left out.
type AssembleOutput struct {
	Items       []ItemOutput    `json:"items" jsonschema:"the resources returned, in order, pinned first"`
	Omitted     []OmittedOutput `json:"omitted" jsonschema:"the candidates left out, each with the reason"`
	TotalTokens int             `json:"total_tokens" jsonschema:"tokens of the returned contents together; never above token_budget"`
	TokenBudget int             `json:"token_budget"`
	Tokenizer   string          `json:"tokenizer" jsonschema:"the tiktoken encoding tokens are counted in"`
}

// ItemOutput is one returned resource.
type ItemOutput struct {
	URI         string  `json:"uri" jsonschema:"the contextd:resource/... URI (resources/read returns it whole)"`
	Server      string  `json:"server" jsonschema:"the upstream server name"`
	UpstreamURI string  `json:"upstream_uri" jsonschema:"the URI on the upstream server"`
	Name        string  `json:"name"`
	Title       string  `json:"title,omitempty"`
	MIMEType    string  `json:"mime_type,omitempty"`
	Form        string  `json:"form" jsonschema:"whole, sections, outline or pointer"`
	Tokens      int     `json:"tokens"`
	Score       float64 `json:"score" jsonschema:"fused relevance score"`
	Reason      string  `json:"reason" jsonschema:"why it was returned in this form"`
	FetchedAt   string  `json:"fetched_at,omitempty" jsonschema:"when the contents were read from the server (RFC 3339)"`
	Freshness   string  `json:"freshness,omitempty" jsonschema:"subscription, ttl or read"`
}

// OmittedOutput is one candidate left out.
type OmittedOutput struct {
	URI    string  `json:"uri"`
	Reason string  `json:"reason" jsonschema:"budget_exhausted, low_value, read_failed, binary_excluded, duplicate_content, ..."`
	Detail string  `json:"detail,omitempty"`
	Score  float64 `json:"score"`
}

// SearchInput is the input of the search_resources tool.
type SearchInput struct {
	Query       string   `json:"query" jsonschema:"what to look for, in plain words"`
	Limit       int      `json:"limit,omitempty" jsonschema:"how many results, default 10"`
	Servers     []string `json:"servers,omitempty" jsonschema:"only these configured upstream server names (default: all)"`
	MIMETypes   []string `json:"mime_types,omitempty" jsonschema:"only these media types, e.g. text/* (default: all)"`
	URIPrefixes []string `json:"uri_prefixes,omitempty" jsonschema:"only upstream URIs starting with one of these (default: all)"`
}

// SearchOutput is the structured content of search_resources.
type SearchOutput struct {
	Results []SearchResult `json:"results" jsonschema:"best first"`
}

// SearchResult is one ranked resource.
type SearchResult struct {
	URI         string  `json:"uri" jsonschema:"the contextd:resource/... URI, for resources/read or assemble_context pins"`
	Server      string  `json:"server"`
	UpstreamURI string  `json:"upstream_uri"`
	Name        string  `json:"name"`
	Title       string  `json:"title,omitempty"`
	Description string  `json:"description,omitempty"`
	MIMEType    string  `json:"mime_type,omitempty"`
	Size        int64   `json:"size,omitempty"`
	Score       float64 `json:"score"`
	Rank        int     `json:"rank"`
}

// schemaFor returns T's JSON schema with every optional list typed "array"
// alone: jsonschema-go types a Go slice ["null", "array"], which hosts that
// map tool schemas onto a single-type dialect (Gemini's function
// declarations) reject. contextd never sends null for a list, and a
// caller omits a list rather than sending null.
func schemaFor[T any]() *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err)) // a programming error
	}
	var walk func(*jsonschema.Schema)
	walk = func(sc *jsonschema.Schema) {
		if sc == nil {
			return
		}
		if len(sc.Types) == 2 && slices.Contains(sc.Types, "null") {
			sc.Type, sc.Types = slices.DeleteFunc(slices.Clone(sc.Types), func(t string) bool { return t == "null" })[0], nil
		}
		for _, p := range sc.Properties {
			walk(p)
		}
		walk(sc.Items)
	}
	walk(sc)
	return sc
}

func (s *Server) addTools() {
	readOnly := &mcpsdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}
	mcpsdk.AddTool(s.mcp, &mcpsdk.Tool{
		InputSchema: schemaFor[AssembleInput](), OutputSchema: schemaFor[AssembleOutput](),
		Name:  "assemble_context",
		Title: "Assemble context for a task",
		Description: "Returns the documents, code and data from the user's MCP servers that best serve a task, read and packed within a token budget. " +
			"Call it first when a question may depend on the user's own material (project docs, code, tickets, notes) rather than general knowledge, " +
			"and again with a sharper task if what comes back is not enough. Each returned resource is embedded with its URI and MIME type; " +
			"a resource too large for the budget comes back as its most relevant sections or its outline. The last text says what was left out and why.",
		Annotations: readOnly,
	}, s.assembleTool)
	mcpsdk.AddTool(s.mcp, &mcpsdk.Tool{
		InputSchema: schemaFor[SearchInput](), OutputSchema: schemaFor[SearchOutput](),
		Name:  "search_resources",
		Title: "Search the user's resources",
		Description: "Ranks the resources of the user's MCP servers for a query and returns links to the best ones with their scores, reading nothing. " +
			"Call it to see what exists (to choose pins for assemble_context, or a resource to read whole); call assemble_context instead to get the contents.",
		Annotations: readOnly,
	}, s.searchTool)
}

func (s *Server) assembleTool(ctx context.Context, req *mcpsdk.CallToolRequest, in AssembleInput) (*mcpsdk.CallToolResult, AssembleOutput, error) {
	ar := engine.AssembleRequest{
		Query: in.Task, TokenBudget: in.Budget,
		Filter:        engine.Filter{Servers: in.Servers, MIMETypes: in.MIMETypes, URIPrefixes: in.URIPrefixes},
		IncludeBinary: in.IncludeBinary,
	}
	if ar.TokenBudget == 0 {
		ar.TokenBudget = DefaultBudget
	}
	for _, p := range in.Pins {
		k, err := ParseResourceURI(p)
		if err != nil {
			return nil, AssembleOutput{}, fmt.Errorf("pin %q: %v", p, err)
		}
		ar.Pinned = append(ar.Pinned, k)
	}
	res, err := s.assemble(ctx, req.Session, ar)
	if err != nil {
		if ctx.Err() != nil {
			return nil, AssembleOutput{}, rpcError(ctx, err, "")
		}
		// A tool error the model can read and act on (a bad filter, an
		// unknown server, nothing synced yet).
		return nil, AssembleOutput{}, err
	}
	out := AssembleOutput{Items: []ItemOutput{}, Omitted: []OmittedOutput{}, TotalTokens: res.TotalTokens, TokenBudget: ar.TokenBudget, Tokenizer: res.Tokenizer}
	result := &mcpsdk.CallToolResult{}
	for _, it := range res.Items {
		io := ItemOutput{URI: ResourceURI(it.Key()), Server: it.Server, UpstreamURI: it.URI, Name: it.Name, Title: it.Title,
			MIMEType: it.MIMEType, Form: string(it.Form), Tokens: it.Tokens, Score: it.Score, Reason: it.Reason}
		if f, ok := res.Fetched[it.Key()]; ok {
			io.FetchedAt, io.Freshness = f.At.UTC().Format(time.RFC3339), f.Freshness()
		}
		out.Items = append(out.Items, io)
		if len(it.Contents) == 0 {
			result.Content = append(result.Content, link(it.Candidate))
			continue
		}
		for _, c := range it.Contents {
			result.Content = append(result.Content, &mcpsdk.EmbeddedResource{Resource: itemContents(it.Key(), c)})
		}
	}
	for _, o := range res.Omitted {
		out.Omitted = append(out.Omitted, OmittedOutput{URI: ResourceURI(o.Key()), Reason: string(o.Reason), Detail: o.Detail, Score: o.Score})
	}
	result.Content = append(result.Content, &mcpsdk.TextContent{Text: summary(res, ar.TokenBudget)})
	return result, out, nil
}

// NoteAnswered remembers the texts res hands a caller (of an assemble
// of this server's, or of the gRPC Assemble beside it) as reads the MCP
// server answered (see readResource): a bridge may take them from an
// assemble instead of reading them, and pass them back. A whole item is
// one read, as resources/read answers it; each section or cut head of
// MinDigestBytes or more is a part (mcp.ServedLists.NotePart: told only
// when passed back as it is). An outline is contextd's own text, and is
// not remembered. It may append to the record of reads (Options.StateFile).
func (s *Server) NoteAnswered(res *engine.AssembleResult) {
	lists := s.eng.ServedLists()
	noted := false
	for _, it := range res.Items {
		k := it.Key()
		private := res.Fetched[k].Private
		switch it.Form {
		case selector.FormWhole:
			cs := make([]resource.Content, 0, len(it.Contents))
			for _, c := range it.Contents {
				cs = append(cs, c.Content)
			}
			switch {
			case len(cs) == 0:
			case private:
				lists.NotePrivateRead(k, cs)
			default:
				lists.NoteRead(k, cs)
			}
			noted = noted || len(cs) > 0
		case selector.FormSections, selector.FormTruncated:
			for _, c := range it.Contents {
				if len(c.Text) >= mcp.MinDigestBytes || len(c.Blob) >= mcp.MinDigestBytes {
					lists.NotePart(k, []resource.Content{c.Content}, private)
					noted = true
				}
			}
		}
	}
	if noted {
		s.saveServed(true) // a crash right after must not lose them
	}
}

// itemContents is one content of a returned item; a part of the text (a
// section, or a head cut to fit) says which lines it holds in _meta
// (contextd/start_line, contextd/end_line, 1-based, inclusive).
func itemContents(k resource.Key, c selector.ItemContent) *mcpsdk.ResourceContents {
	rc := contents(k, c.Content)
	if c.StartLine > 0 {
		rc.Meta["contextd/start_line"], rc.Meta["contextd/end_line"] = c.StartLine, c.EndLine
	}
	if c.Truncated {
		rc.Meta["contextd/truncated"] = true
	}
	return rc
}

// link is a resource_link to a candidate's namespaced URI.
func link(c selector.Candidate) *mcpsdk.ResourceLink {
	l := &mcpsdk.ResourceLink{URI: ResourceURI(c.Key()), Name: c.Name, Title: c.Title, Description: c.Description, MIMEType: c.MIMEType}
	if l.Name == "" {
		l.Name = c.URI
	}
	if c.Size > 0 {
		l.Size = new(c.Size)
	}
	return l
}

// maxSummaryLines bounds the omitted lines of the summary text.
const maxSummaryLines = 8

// summary is the short text that closes an assemble_context result.
func summary(res *engine.AssembleResult, budget int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "contextd returned %d resource(s), %d of %d tokens (%s).", len(res.Items), res.TotalTokens, budget, res.Tokenizer)
	if len(res.Omitted) == 0 {
		return b.String()
	}
	counts := map[string]int{}
	var reasons []string
	for _, o := range res.Omitted {
		if counts[string(o.Reason)] == 0 {
			reasons = append(reasons, string(o.Reason))
		}
		counts[string(o.Reason)]++
	}
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	fmt.Fprintf(&b, " Left out %d: %s.", len(res.Omitted), strings.Join(parts, ", "))
	for i, o := range res.Omitted {
		if i == maxSummaryLines {
			fmt.Fprintf(&b, "\n- … and %d more (see structuredContent.omitted)", len(res.Omitted)-i)
			break
		}
		fmt.Fprintf(&b, "\n- %s: %s", ResourceURI(o.Key()), o.Reason)
	}
	return b.String()
}

func (s *Server) searchTool(ctx context.Context, req *mcpsdk.CallToolRequest, in SearchInput) (*mcpsdk.CallToolResult, SearchOutput, error) {
	s.remember(req.Session, in.Query)
	ranked, err := s.eng.Search(ctx, engine.SearchRequest{Query: in.Query, Limit: in.Limit,
		Filter: engine.Filter{Servers: in.Servers, MIMETypes: in.MIMETypes, URIPrefixes: in.URIPrefixes}})
	if err != nil {
		if ctx.Err() != nil {
			return nil, SearchOutput{}, rpcError(ctx, err, "")
		}
		return nil, SearchOutput{}, err
	}
	out := SearchOutput{Results: []SearchResult{}}
	result := &mcpsdk.CallToolResult{Content: []mcpsdk.Content{}}
	for _, r := range ranked {
		out.Results = append(out.Results, SearchResult{URI: ResourceURI(r.Key()), Server: r.Server, UpstreamURI: r.URI, Name: r.Name,
			Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size, Score: r.Score, Rank: r.Rank})
		l := link(selector.Candidate{Server: r.Server, URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size})
		l.Meta = mcpsdk.Meta{"contextd/score": r.Score, "contextd/rank": r.Rank, MetaServer: r.Server, MetaURI: r.URI}
		result.Content = append(result.Content, l)
	}
	if len(ranked) == 0 {
		result.Content = append(result.Content, &mcpsdk.TextContent{Text: "No resource matched."})
	}
	return result, out, nil
}

// assemble remembers the task for the session's completions, assembles,
// and remembers the texts it hands out (NoteAnswered): the tool, the
// context prompt and the contextd:context template all answer with them.
// The servers in scope were waited for before the request took its turn
// (see readyScope).
func (s *Server) assemble(ctx context.Context, sess *mcpsdk.ServerSession, req engine.AssembleRequest) (*engine.AssembleResult, error) {
	s.remember(sess, req.Query)
	res, err := s.eng.Assemble(ctx, req)
	if err == nil {
		s.NoteAnswered(res)
	}
	return res, err
}
