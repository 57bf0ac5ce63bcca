package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/template"
)

// checkPins enforces max_pins and the pin policy: a pinned URI must be
// listed by its server (in the index) or be an expansion of one of the
// server's templates (template.Matches), unless the server's configuration
// sets allow_unlisted_pins. A pin goes to the server with contextd's
// credentials, so without the policy any caller could make the daemon read
// whatever the server would serve it (an unlisted dotfile, a "../" path).
//
// Errors: ErrInvalidArgument.
func (e *Engine) checkPins(pins []resource.Key) error {
	if lim := e.set().limits.MaxPins; len(pins) > lim {
		return fmt.Errorf("%w: %d pinned resources; at most %d (max_pins)", ErrInvalidArgument, len(pins), lim)
	}
	tries := maxTemplateMatches
	for _, k := range pins {
		if _, known := e.mirror(k.Server); !known || k.URI == "" {
			continue // Assemble reports these
		}
		if err := e.carriesCredential(k); err != nil {
			return err
		}
		if !e.readable(k, &tries) {
			return fmt.Errorf("%w: pinned %q: server %q does not list it and none of its templates yields it (set allow_unlisted_pins: true on the server to pin any URI)", ErrInvalidArgument, k.URI, k.Server)
		}
	}
	return nil
}

// carriesCredential refuses a URI the server does not list that holds a
// credential a caller may not send on (see serverSet.callers: the daemon's
// token, user info, a bearer or secret-named value): a caller led to pin
// one, or to read it, would send it to that server. The error does not
// quote the URI. Other configured secrets are no reason to refuse: which
// pins are refused would tell a caller which of its guesses is a server's
// password. Errors: ErrInvalidArgument.
func (e *Engine) carriesCredential(k resource.Key) error {
	if _, listed := e.ix.Get(k); listed || !e.set().mayNotCarry(k.URI) {
		return nil
	}
	return fmt.Errorf("%w: a URI for server %q holds a credential (the daemon's token, user info or a token value): it is not sent", ErrInvalidArgument, k.Server)
}

// readable reports whether the pin policy lets a caller have k read: its
// server lists it, one of its templates yields it, or the server's
// configuration sets allow_unlisted_pins. tries is what is left of the
// request's template matches (see offeredByTemplate).
func (e *Engine) readable(k resource.Key, tries *int) bool {
	if _, ok := e.ix.Get(k); ok {
		return true
	}
	if srv, _ := e.set().cfg.Server(k.Server); srv.AllowUnlistedPins {
		return true
	}
	return e.offeredByTemplate(k, tries)
}

// maxTemplateMatches bounds the templates one request's pins (or one
// read) are matched against, after the cheap checks (URI length, literal
// prefix): one match can cost tens of milliseconds of CPU, more for a
// template of many variables in one expression, and a server may have
// template.MaxVars variables in each of its mcp.DefaultMaxTemplates
// templates.
const maxTemplateMatches = 64

// offeredByTemplate reports whether one of k.Server's templates expands to
// k.URI, trying at most *tries templates whose literal prefix k.URI has
// (and counting them off).
func (e *Engine) offeredByTemplate(k resource.Key, tries *int) bool {
	m, ok := e.mirror(k.Server)
	if !ok || len(k.URI) > template.MaxMatchBytes {
		return false
	}
	for _, tp := range e.parsedTemplates(k.Server, m) {
		if *tries <= 0 {
			return false
		}
		if !tp.MayMatch(k.URI) {
			continue
		}
		*tries--
		if tp.Matches(k.URI) {
			return true
		}
	}
	return false
}

// A readBudget bounds the reads of one Assemble: at most MaxReads reads, at
// most MaxResponseBytes bytes of contents (text and blobs) in all, and no
// read after its time (Options.RequestReadTime from the request's start).
// It is safe for concurrent use.
type readBudget struct {
	lim   config.Limits
	until time.Time
	time  time.Duration // until less the request's start

	// dropBlobs is set when the request takes no blobs (include_binary
	// off): their bytes are counted apart, against a bound of their own,
	// so a server answering with blobs the request drops cannot use up
	// the bytes other servers' texts need.
	dropBlobs bool

	mu        sync.Mutex
	reads     int
	bytes     int            // contents the request may use
	dropped   int            // contents downloaded and not used, each server's up to MaxResponseBytes
	droppedBy map[string]int // the same, per server, in full
}

// maxDroppedServers is how many servers' worth of unusable bytes
// (max_response_bytes each) one request downloads before it stops
// reading servers that sent it any: contents it drops (blobs it does not
// take, results that do not fit, items claiming another URI) are counted
// per server, so one server answering with them stops its own reads, not
// every server's, and in all, each server's count up to
// max_response_bytes, so that one server cannot fill the total alone (a
// read just under its share, then one of 16 MiB, did). A server that has
// sent nothing unusable is still read once the total is reached: three
// servers answering with blobs made every other server's candidates
// refused. A request downloads at most about max_response_bytes ×
// (1 + maxDroppedServers) plus one max_message_bytes read per server, and
// past that total one read from each server that had dropped nothing.
const maxDroppedServers = 3

// newReadBudget returns the read budget of a request starting now, whose
// context is ctx. With a deadline, the reads end a tenth of the time left
// before it (at least 100 ms, at most 5 s), so the caller gets what was
// read rather than DEADLINE_EXCEEDED: a caller waiting 60 s (the CLI's
// default) got nothing from a request whose reads took their whole 60 s.
func (e *Engine) newReadBudget(ctx context.Context) *readBudget {
	t := e.reqReadTO
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		t = max(0, min(t, left-min(max(left/10, 100*time.Millisecond), 5*time.Second)))
	}
	return &readBudget{lim: e.set().limits, until: time.Now().Add(t), time: t}
}

// start claims one read from server and returns how much of the request's
// read time is left; it fails when the request has used up its reads, its
// bytes or its time, or has dropped max_response_bytes of server's
// contents (maxDroppedServers times that in all).
func (b *readBudget) start(server string) (time.Duration, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	left := time.Until(b.until)
	switch {
	case b.reads >= b.lim.MaxReads:
		return 0, fmt.Errorf("not read: this request made its %d reads (max_reads)", b.lim.MaxReads)
	case b.bytes >= b.lim.MaxResponseBytes:
		return 0, fmt.Errorf("not read: this request read its %d bytes (max_response_bytes)", b.lim.MaxResponseBytes)
	case b.droppedBy[server] >= b.lim.MaxResponseBytes:
		return 0, fmt.Errorf("not read: this request already dropped %d bytes from this server that it could not use (max_response_bytes)", b.droppedBy[server])
	case b.dropped >= maxDroppedServers*b.lim.MaxResponseBytes && b.droppedBy[server] > 0:
		return 0, fmt.Errorf("not read: this request already dropped %d bytes it could not use (%d × max_response_bytes)", b.dropped, maxDroppedServers)
	case left <= 0:
		return 0, fmt.Errorf("not read: this request spent its %v of read time", b.time)
	}
	b.reads++
	return left, nil
}

// made returns how many reads start allowed: the resources/read calls
// the request made.
func (b *readBudget) made() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reads
}

// contentBytes is what spend counts for contents.
func contentBytes(contents []resource.Content) int {
	n := 0
	for _, c := range contents {
		n += len(c.Text) + len(c.Blob) + len(c.URI) + len(c.MIMEType) + len(c.Error) + itemOverhead
	}
	return n
}

// itemOverhead is what spend counts for each content item besides its
// strings: an empty item still costs an entry in the answer.
const itemOverhead = 64

// bytesLeft returns the bytes of contents the request may still read.
func (b *readBudget) bytesLeft() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lim.MaxResponseBytes - b.bytes
}

// spend counts the bytes of contents read from server (each item's text or
// blob, URI, MIME type and error, and itemOverhead), and unused, bytes the
// server sent that the request dropped before (items claiming another
// URI); it fails, and the contents are not used, when they would take the
// request past MaxResponseBytes, or its blobs, with dropBlobs, past
// MaxResponseBytes of what it dropped from server. An item's URI is
// returned with it, kept or dropped, so a read of many empty items with
// long URIs costs what a read of as much text does.
func (b *readBudget) spend(server string, contents []resource.Content, unused int) error {
	n := b.usable(contents)
	blobs := contentBytes(contents) - n
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes+n > b.lim.MaxResponseBytes {
		// Downloaded and not used: counted with the dropped blobs.
		b.drop(server, n+blobs+unused)
		return fmt.Errorf("dropped: %d bytes would take this request past %d (max_response_bytes)", n, b.lim.MaxResponseBytes)
	}
	if b.droppedBy[server]+blobs+unused > b.lim.MaxResponseBytes {
		b.drop(server, blobs+unused)
		return fmt.Errorf("dropped: %d bytes this request cannot use (blobs it does not take, items claiming another URI) would take it past %d bytes dropped from this server (max_response_bytes)", blobs+unused, b.lim.MaxResponseBytes)
	}
	b.bytes += n
	b.drop(server, blobs+unused)
	return nil
}

// drop counts n bytes of server's contents the request downloaded and does
// not use. b.mu is held.
func (b *readBudget) drop(server string, n int) {
	if n == 0 {
		return
	}
	if b.droppedBy == nil {
		b.droppedBy = map[string]int{}
	}
	was := b.droppedBy[server]
	b.droppedBy[server] += n
	b.dropped += min(b.droppedBy[server], b.lim.MaxResponseBytes) - min(was, b.lim.MaxResponseBytes)
}

// usable returns what spend counts of contents against the bytes the
// request may use: all of it, or, with dropBlobs, all but the blobs.
func (b *readBudget) usable(contents []resource.Content) int {
	n := contentBytes(contents)
	if b.dropBlobs {
		for _, c := range contents {
			n -= len(c.Blob)
		}
	}
	return n
}

// maxQuotedClaim bounds the bytes of a claimed URI an item's error quotes
// and the URI it is returned with.
const maxQuotedClaim = 256

// checkItems marks, in a copy of contents, each item whose URI is neither
// empty, the URI read, nor under it (a read of "file:///dir/" may return
// "file:///dir/a.md"): a server answering for a URI it was not asked about
// (another server's, say) must not have its text passed off as the
// resource's. A marked item is dropped as invalid_content. When quote is
// set, the error quotes the URI claimed, cut to maxQuotedClaim bytes and
// masked by red (the server's secrets: "other://x/TOKEN", a signed URL),
// and the item carries that as its URI. Callers clear quote when the
// server may repeat a caller's words in the claim (uri is a pin or a
// template's expansion, or the server was sent one before): masking them
// would tell the caller which are secrets, so the claim is not quoted and
// the item carries uri. contents itself, which the read cache may share,
// is not changed.
func checkItems(uri string, contents []resource.Content, red *redact.Redactor, quote bool) []resource.Content {
	var out []resource.Content
	for i, c := range contents {
		if c.URI == "" || c.URI == uri || c.Error != "" || under(c.URI, uri) {
			continue
		}
		if out == nil {
			out = slices.Clone(contents)
		}
		if quote {
			claim := red.String(redact.Clip(c.URI, maxQuotedClaim))
			out[i].Error = fmt.Sprintf("the item claims URI %q, which is not the URI read nor under it", claim)
			// The item's URI goes back as Dropped's URI: as quoted.
			out[i].URI = claim
		} else {
			out[i].Error = "the item claims another URI, not the URI read nor under it (not quoted: the server was sent a caller's words, which it may repeat)"
			out[i].URI = uri
		}
		out[i].Text, out[i].Blob = "", nil
	}
	if out == nil {
		return contents
	}
	return out
}

// under reports whether item is a sub-resource of uri: item extends uri by
// a path below it ("file:///dir/" → "file:///dir/a.md", "doc://x" →
// "doc://x/figure"), without an empty segment (a URI with no path, such as
// "file:" or "https://", would have "file:///home/…" or another host's
// URL under it) or a dot segment climbing back out.
func under(item, uri string) bool {
	rest, ok := strings.CutPrefix(item, uri)
	if !ok || rest == "" {
		return false
	}
	if !strings.HasSuffix(uri, "/") {
		if rest, ok = strings.CutPrefix(rest, "/"); !ok || rest == "" {
			return false
		}
	}
	if strings.HasPrefix(rest, "/") || strings.HasSuffix(uri, ":") || strings.HasSuffix(uri, "://") {
		return false
	}
	// Dot segments however they are written: mixed (".%2e"), encoded twice
	// ("%252e%252e") or between backslashes, as template values are checked.
	return !template.HasDotSegment(rest)
}

// tooLargeFor is how long a read over max_message_bytes is remembered for
// a resource whose version (size, lastModified, MIME type) does not change.
const tooLargeFor = time.Hour

// maxTooLarge bounds the resources remembered as too large.
const maxTooLarge = 4096

// tooLargeReads remembers the resources whose read was over
// max_message_bytes, per version of their descriptor, so that every
// Assemble that ranks one does not download it again to fail the same way.
type tooLargeReads struct {
	mu sync.Mutex
	m  map[resource.Key]tooLarge
}

type tooLarge struct {
	version string
	until   time.Time
	err     string // why no request can use it; "" when only size is known
	size    int    // bytes (contentBytes) of the last read of a result that did not fit
}

// version identifies what a read of d returns: a change of size,
// lastModified or MIME type is a new version, read again.
func version(d resource.Descriptor, ok bool) string {
	if !ok {
		return "unlisted"
	}
	return fmt.Sprintf("%d|%s|%s", d.Size, d.LastModified, d.MIMEType)
}

func (t *tooLargeReads) check(k resource.Key, v string, now time.Time) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[k]
	if !ok || e.version != v || now.After(e.until) || e.err == "" {
		return nil
	}
	return fmt.Errorf("not read again: this version's last read failed: %s", e.err)
}

// size returns the bytes of the last read of version v of k that did not
// fit its request, or 0.
func (t *tooLargeReads) size(k resource.Key, v string, now time.Time) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.m[k]
	if !ok || e.version != v || now.After(e.until) {
		return 0
	}
	return e.size
}

// rememberSize notes that version v of k read n bytes, more than its
// request had left.
func (t *tooLargeReads) rememberSize(k resource.Key, v string, n int, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTooLarge {
		t.m = map[resource.Key]tooLarge{}
	}
	t.m[k] = tooLarge{version: v, until: now.Add(tooLargeFor), size: n}
}

func (t *tooLargeReads) remember(k resource.Key, v string, err error, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil || len(t.m) >= maxTooLarge {
		t.m = map[resource.Key]tooLarge{} // a crude bound: forget them all
	}
	t.m[k] = tooLarge{version: v, until: now.Add(tooLargeFor), err: err.Error()}
}
