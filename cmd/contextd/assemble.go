package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/service"
	ctxsync "github.com/contextd/contextd/internal/sync"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// oneShot holds the flags shared by assemble and search.
type oneShot struct {
	cfgPath  string
	servers  stringList
	json     bool
	timeout  time.Duration
	logLevel string
	waitFull bool
}

func (o *oneShot) register(fs *flag.FlagSet) {
	fs.StringVar(&o.cfgPath, "config", "", "config file (YAML or JSON)")
	fs.Var(&o.servers, "server", "only use this configured server (repeatable)")
	fs.BoolVar(&o.json, "json", false, "print the protojson of the gRPC response")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long to wait for servers to connect, sync and index their small resources' text")
	fs.StringVar(&o.logLevel, "log-level", "warn", "debug, info, warn or error (logs go to stderr)")
	fs.BoolVar(&o.waitFull, "wait-full", false, "wait for every server's whole first content pass, passages' vectors included (up to --timeout), not only for the resources the query needs")
}

// start loads the config, starts the engine's mirrors and waits for their
// first sync and the part of their first content pass that focus (the
// query) needs: the text of the resources it ranks highest, read first
// (with --wait-full, or without focus, the whole pass). It says on stderr
// what is still being indexed. stop ends the mirrors and closes the
// engine.
//
// extra names servers to connect to beyond --server (the servers of pinned
// resources); they do not widen the ranking scope, which is --server.
func (o *oneShot) start(ctx context.Context, stderr io.Writer, focus string, extra ...string) (eng *engine.Engine, stop func(), err error) {
	if o.timeout <= 0 {
		return nil, nil, fmt.Errorf("%w: --timeout %v must be positive", engine.ErrInvalidArgument, o.timeout)
	}
	if _, err := newLogger(io.Discard, o.logLevel); err != nil {
		return nil, nil, err // a bad --log-level before the config's errors
	}
	cfg, err := loadConfig(o.cfgPath, stderr)
	if err != nil {
		return nil, nil, err
	}
	log, err := newLoggerFormat(stderr, o.logLevel, cfg.Ops.LogFormat)
	if err != nil {
		return nil, nil, err
	}
	dropSelf(cfg, log) // a host's file lists contextd itself, as serve and mcp skip it
	if len(cfg.Servers) == 0 {
		return nil, nil, fmt.Errorf("%s: no servers configured (add mcpServers entries)", cfg.Path)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	for _, s := range o.servers {
		if _, ok := cfg.Server(s); !ok {
			return nil, nil, fmt.Errorf("%w: unknown server %q in --server (configured: %s)", engine.ErrInvalidArgument, s, strings.Join(names, ", "))
		}
	}
	for _, s := range extra {
		if _, ok := cfg.Server(s); !ok {
			return nil, nil, fmt.Errorf("%w: unknown server %q in --pin (configured: %s)", engine.ErrInvalidArgument, s, strings.Join(names, ", "))
		}
	}
	if len(o.servers) > 0 { // connect only to what was asked for
		want := append(slices.Clone(o.servers), extra...)
		cfg.KeepServers(func(s config.Server) bool { return slices.Contains(want, s.Name) })
	}
	// A run limited to some servers keeps the others' persisted descriptors.
	if o.waitFull {
		focus = ""
	}
	eng, err = engine.New(ctx, engine.Options{Config: cfg, Logger: log, KeepOtherServers: len(o.servers) > 0, SharedDataDir: true, Focus: focus, ShowServerText: true,
		// A one-shot run gives stdio servers 1s per shutdown stage, not 5s.
		Mirror: func(mo *ctxsync.Options) { mo.TerminateDuration = time.Second }})
	if err != nil {
		return nil, nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(runCtx) })
	stop = func() { cancel(); wg.Wait(); _ = eng.Close() }

	fmt.Fprintf(stderr, "contextd: mirroring %d server(s)...\n", len(cfg.Servers))
	wctx, wcancel := context.WithTimeout(ctx, o.timeout)
	defer wcancel()
	if err := waitReady(wctx, eng, focus != "", stderr); err != nil {
		if ctx.Err() != nil {
			stop()
			return nil, nil, ctx.Err()
		}
		// Go on with the servers that did sync; the slow ones show below.
		fmt.Fprintf(stderr, "contextd: not every server finished its first sync and content pass within --timeout %v; going on with what is indexed\n", o.timeout)
	}
	for _, s := range eng.Servers() {
		line := fmt.Sprintf("contextd:   %-16s %-8s %d resources (%d with content indexed), %d templates", esc(s.Server), s.State, s.Resources, s.Contents, s.Templates)
		if s.Syncs > 0 && !s.Capabilities.Resources {
			line += " (no resources capability)"
		}
		if s.LastError != "" {
			line += " — " + esc(firstLine(s.LastError))
		}
		fmt.Fprintln(stderr, line)
		if p := pendingLine(s.Status); p != "" {
			fmt.Fprintln(stderr, "contextd:   "+strings.Repeat(" ", 17)+p)
		}
	}
	return eng, stop, nil
}

// pendingLine says what of a server is not indexed yet, so an answer given
// before the whole content pass says what it could not see, or "" when
// nothing is pending.
func pendingLine(s ctxsync.Status) string {
	var parts []string
	if s.DescriptorsPending > 0 {
		parts = append(parts, fmt.Sprintf("%d descriptors not embedded yet (ranked by their words only)", s.DescriptorsPending))
	}
	if s.ContentWaiting > 0 {
		w := fmt.Sprintf("%d resources' text not indexed", s.ContentWaiting)
		switch s.ContentBound {
		case "":
			w += " yet (the query's best candidates were read first)"
		default:
			w += fmt.Sprintf(" (bound reached: %s)", s.ContentBound)
		}
		parts = append(parts, w)
	}
	if s.PassagesPending > 0 {
		parts = append(parts, fmt.Sprintf("%d passages not embedded yet", s.PassagesPending))
	}
	if len(parts) == 0 {
		return ""
	}
	return "pending: " + strings.Join(parts, "; ")
}

func assemble(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("assemble", stderr)
	var o oneShot
	o.register(fs)
	var a assembleFlags
	a.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	q, err := a.validate(pos) // before connecting anything
	if err != nil {
		return err
	}
	in, err := a.request(q, o.servers)
	if err != nil {
		return err
	}
	if err := (engine.Filter{MIMETypes: a.mimes, URIPrefixes: a.prefixes}).Check(); err != nil {
		return err // before connecting anything
	}
	var pinnedServers []string
	for _, p := range in.GetPinned() {
		pinnedServers = append(pinnedServers, p.GetServer())
	}
	eng, stop, err := o.start(ctx, stderr, q, pinnedServers...)
	if err != nil {
		return err
	}
	defer stop()
	res, err := eng.Assemble(ctx, service.AssembleRequest(in))
	if err != nil {
		return err
	}
	resp := service.AssembleResponse(res, int32(a.budget))
	noMatch(stderr, resp)
	if o.json {
		return printJSON(stdout, resp)
	}
	printAssemble(stdout, resp, a.content)
	return nil
}

// noMatch says on stderr when an answer considered no resource at all.
func noMatch(stderr io.Writer, resp *contextdv1.AssembleResponse) {
	if len(resp.GetItems()) == 0 && len(resp.GetOmitted()) == 0 {
		fmt.Fprintln(stderr, "contextd: no resource matches (check --server, --mime and --uri-prefix)")
	}
}

// assembleFlags are the request flags shared by assemble and query.
type assembleFlags struct {
	budget, maxItems       int
	includeBinary, content bool
	userAudience           bool
	valueFloor             optionalFloat
	pins, mimes, prefixes  stringList
}

func (a *assembleFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&a.budget, "budget", 2000, "token budget for the returned contents (>= 1)")
	fs.BoolVar(&a.includeBinary, "include-binary", false, "return blob contents as bytes and count them")
	fs.IntVar(&a.maxItems, "max-items", 0, "maximum items to return (0 = no limit)")
	fs.BoolVar(&a.content, "content", false, "print the returned texts (human output)")
	fs.BoolVar(&a.userAudience, "include-user-audience", false, `also return resources annotated for the user only (audience ["user"])`)
	fs.Var(&a.valueFloor, "value-floor", "leave out candidates worth less than this share of the best one returned, in [0, 1] (default: the daemon's, 0.9; 0 keeps all that fit)")
	fs.Var(&a.pins, "pin", "return this resource first: SERVER=URI (repeatable)")
	fs.Var(&a.mimes, "mime", "only rank resources of this MIME type, e.g. text/markdown or text/* (repeatable)")
	fs.Var(&a.prefixes, "uri-prefix", "only rank resources whose URI starts with this (repeatable)")
}

// request builds the gRPC request the flags describe.
func (a *assembleFlags) request(q string, servers []string) (*contextdv1.AssembleRequest, error) {
	req := &contextdv1.AssembleRequest{
		Query: q, TokenBudget: int32(a.budget), Servers: servers, IncludeBinary: a.includeBinary,
		MaxItems: int32(a.maxItems), MimeTypes: a.mimes, UriPrefixes: a.prefixes, IncludeUserAudience: a.userAudience,
	}
	if a.valueFloor.set {
		req.ValueFloor = &a.valueFloor.v
	}
	for _, p := range a.pins {
		server, uri, ok := strings.Cut(p, "=")
		if !ok || server == "" || uri == "" {
			return nil, fmt.Errorf("%w: --pin %q: want SERVER=URI", engine.ErrInvalidArgument, p)
		}
		req.Pinned = append(req.Pinned, &contextdv1.ResourceRef{Server: server, Uri: uri})
	}
	return req, nil
}

// validate joins the positional arguments into the query and checks the flags.
func (a *assembleFlags) validate(pos []string) (string, error) {
	q := strings.Join(pos, " ")
	if err := validate(q, a.budget); err != nil {
		return "", err
	}
	if a.maxItems < 0 || a.maxItems > math.MaxInt32 {
		return "", fmt.Errorf("%w: --max-items %d is out of range (0..%d; 0 = no limit)", engine.ErrInvalidArgument, a.maxItems, math.MaxInt32)
	}
	if a.valueFloor.set && !(a.valueFloor.v >= 0 && a.valueFloor.v <= 1) {
		return "", fmt.Errorf("%w: --value-floor %v is outside [0, 1]", engine.ErrInvalidArgument, a.valueFloor.v)
	}
	return q, nil
}

func validate(q string, budget int) error {
	if strings.TrimSpace(q) == "" {
		return fmt.Errorf("%w: query is empty: give the task as the last argument", engine.ErrInvalidArgument)
	}
	if budget < 1 || budget > math.MaxInt32 {
		return fmt.Errorf("%w: --budget %d is out of range (1..%d tokens)", engine.ErrInvalidArgument, budget, math.MaxInt32)
	}
	return nil
}

func search(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("search", stderr)
	var o oneShot
	o.register(fs)
	limit := fs.Int("limit", 10, "maximum results (0 means 10)")
	var mimes, prefixes stringList
	fs.Var(&mimes, "mime", "only rank resources of this MIME type, e.g. text/markdown or text/* (repeatable)")
	fs.Var(&prefixes, "uri-prefix", "only rank resources whose URI starts with this (repeatable)")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	q := strings.Join(pos, " ")
	if err := validate(q, 1); err != nil {
		return err
	}
	if err := (engine.Filter{MIMETypes: mimes, URIPrefixes: prefixes}).Check(); err != nil {
		return err // before connecting anything
	}
	eng, stop, err := o.start(ctx, stderr, q)
	if err != nil {
		return err
	}
	defer stop()
	ranked, err := eng.Search(ctx, engine.SearchRequest{Query: q, Limit: *limit,
		Filter: engine.Filter{Servers: o.servers, MIMETypes: mimes, URIPrefixes: prefixes}})
	if err != nil {
		return err
	}
	resp := &contextdv1.SearchResponse{}
	for _, r := range ranked {
		resp.Results = append(resp.Results, &contextdv1.SearchResult{
			Server: r.Server, Uri: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
			MimeType: r.MIMEType, Size: r.Size, Score: r.Score, Rank: int32(r.Rank),
		})
	}
	if o.json {
		return printJSON(stdout, resp)
	}
	if len(resp.GetResults()) == 0 {
		fmt.Fprintln(stderr, "contextd: no resource matches (check --server, --mime and --uri-prefix)")
	}
	printSearch(stdout, resp)
	return nil
}

func printSearch(w io.Writer, resp *contextdv1.SearchResponse) {
	if len(resp.GetResults()) > 0 {
		fmt.Fprintln(w, "rank  score   server  uri  name")
	}
	for _, r := range resp.GetResults() {
		fmt.Fprintf(w, "%3d  %.4f  %s  %s  %s\n", r.GetRank(), r.GetScore(), esc(r.GetServer()), esc(r.GetUri()), esc(r.GetName()))
	}
}

func printJSON(w io.Writer, m proto.Message) error {
	// Proto field names (start_line, total_tokens), as the README and the
	// .proto spell them.
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func printAssemble(w io.Writer, r *contextdv1.AssembleResponse, content bool) {
	fmt.Fprintf(w, "%d item(s), %d of %d tokens (%s), %d read(s)\n\n", len(r.GetItems()), r.GetTotalTokens(), r.GetTokenBudget(), esc(r.GetTokenizer()), r.GetReads())
	for _, it := range r.GetItems() {
		trunc := ""
		if f := it.GetForm(); f != "" && f != "whole" {
			trunc = " (" + f + ")"
		} else if it.GetTruncated() {
			trunc = " (truncated)"
		}
		fetched := ""
		if f := it.GetFetchedAt(); f != nil {
			fetched = fmt.Sprintf("; fetched %s (%s)", f.AsTime().Local().Format("15:04:05"), it.GetFreshness())
		}
		fmt.Fprintf(w, "#%d  %s  %s  %d tokens%s\n    %s%s\n", it.GetRank(), esc(it.GetServer()), esc(it.GetUri()), it.GetTokens(), esc(trunc), esc(it.GetReason()), esc(fetched))
		if content {
			for _, c := range it.GetContents() {
				if t, ok := c.GetBody().(*contextdv1.Content_Text); ok {
					if c.GetStartLine() > 0 {
						fmt.Fprintf(w, "\n[lines %d-%d]", c.GetStartLine(), c.GetEndLine())
					}
					fmt.Fprintf(w, "\n%s\n", redact.ControlText(t.Text))
				} else {
					fmt.Fprintf(w, "\n[%d bytes of %s]\n", len(c.GetBlob()), esc(c.GetMimeType()))
				}
			}
			fmt.Fprintln(w)
		}
	}
	if len(r.GetOmitted()) > 0 {
		fmt.Fprintf(w, "\nleft out:\n")
		for _, o := range r.GetOmitted() {
			fmt.Fprintf(w, "#%d  %s  %s  %s: %s\n", o.GetRank(), esc(o.GetServer()), esc(o.GetUri()), esc(o.GetReason()), esc(o.GetDetail()))
		}
	}
}

// esc escapes what a terminal would act on (escape sequences, other control
// characters, bidi overrides, bytes that are not UTF-8) in upstream text shown
// on one line: a server's URIs, names, errors. --json output is not escaped.
func esc(s string) string { return redact.Control(s) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// optionalFloat is a float flag that knows whether it was given.
type optionalFloat struct {
	v   float64
	set bool
}

func (f *optionalFloat) String() string {
	if f == nil || !f.set {
		return ""
	}
	return strconv.FormatFloat(f.v, 'g', -1, 64)
}

func (f *optionalFloat) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	f.v, f.set = v, true
	return nil
}

// waitReport is how often a one-shot command that is still waiting for
// servers says which.
var waitReport = 5 * time.Second

// waitReady is eng.WaitReady (eng.WaitAnswerable with focus) that says,
// every waitReport, which servers it is still waiting for and what they
// are doing, so a server that hangs at connect does not look like contextd
// hanging.
// waitPassages waits until no server has a text passage waiting for its
// vector (the content pass's last step), or until ctx ends.
func waitPassages(ctx context.Context, eng *engine.Engine) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		pending := 0
		for _, s := range eng.Servers() {
			pending += s.PassagesPending
		}
		if pending == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func waitReady(ctx context.Context, eng *engine.Engine, focus bool, stderr io.Writer) error {
	done := make(chan error, 1)
	go func() {
		if focus {
			done <- eng.WaitAnswerable(ctx)
			return
		}
		err := eng.WaitReady(ctx)
		if err == nil {
			err = waitPassages(ctx, eng)
		}
		done <- err
	}()
	tick := time.NewTicker(waitReport)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case err := <-done:
			return err
		case <-tick.C:
			waiting := eng.Waiting()
			if len(waiting) == 0 {
				continue
			}
			var parts []string
			for _, s := range eng.Servers() {
				if slices.Contains(waiting, s.Server) {
					state := s.State.String()
					if s.Activity != "" {
						state = s.Activity
					}
					parts = append(parts, fmt.Sprintf("%s (%s, %d resources, %d with content indexed)", s.Server, state, s.Resources, s.Contents))
				}
			}
			fmt.Fprintf(stderr, "contextd: still waiting after %v for %s\n", time.Since(start).Round(time.Second), strings.Join(parts, ", "))
		}
	}
}
