package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/metrics"
	"github.com/contextd/contextd/internal/service"
)

// reloadDebounce coalesces the events of one save (an editor's write,
// rename and chmod) into one reload.
const reloadDebounce = 300 * time.Millisecond

// reloadSettle is how long a changed file must stay the same before it is
// applied: a writer that truncates the file and writes it again a moment
// later (not by rename) leaves it empty or cut between the two, and that
// file, applied, would remove servers and drop their texts from the
// index.
const reloadSettle = time.Second

// maxEventWait bounds how long events keep putting a check of the file
// off (see reloadDebounce).
const maxEventWait = 2 * time.Second

// pollEvery is how often the file is checked when it cannot be watched.
const pollEvery = 2 * time.Second

// reloader re-reads serve's configuration file and applies it to the engine.
type reloader struct {
	path string         // the configuration file
	cur  *config.Config // the configuration in use, as loaded
	// running holds the settings read once, at start (see restartOnly),
	// as they are in force: the start configuration's, with the token
	// rotate set. A reload's warnings compare with it, not with cur: a
	// setting changed, refused, then changed back is as it runs.
	running *config.Config
	// flags are serve's flag overrides, applied to every configuration read.
	flags func(*config.Config)
	eng   *engine.Engine
	m     *metrics.Metrics
	log   *slog.Logger
	// refused is told why a file was refused ("" once one is applied);
	// ListServers shows it.
	refused func(msg string)
	// loaded is the hash (fileHash) of the file as it was when cur was
	// loaded: an edit made while the daemon starts is a change too.
	loaded string
	// token is the one the guards check (see rotate); nil in tests of
	// the engine's part alone.
	token *service.Token
	// pending hands a configuration read and checked to the goroutine
	// applying them to the engine (see apply), the latest only. read
	// counts the files read; refusedAt is the count when one was last
	// refused, so that an apply finishing after does not clear that.
	pending   chan pendingReload
	read      atomic.Uint64
	refusedAt atomic.Uint64
	// outcome orders a refusal (its count, metric and message) against
	// an apply's check of refusedAt and its clearing of them.
	outcome sync.Mutex
	// tlsRead is what the TLS files serve read at start held (see
	// tlsDigests): a file replaced in place is not read again until a
	// restart, and a reload says so.
	tlsRead map[string]string
}

// tlsDigests returns the SHA-256, in hex, of each of the TLS files serve
// reads once, at start (its certificate, key and client CAs), by field
// name; "" for a file that cannot be read; none for a field not set.
func tlsDigests(t config.TLS) map[string]string {
	out := map[string]string{}
	for _, f := range []struct{ field, path string }{{"tls.cert_file", t.CertFile}, {"tls.key_file", t.KeyFile}, {"tls.client_ca_file", t.ClientCAFile}} {
		if f.path == "" {
			continue
		}
		b, err := config.ReadTLSFile(f.path)
		if err != nil {
			out[f.field] = ""
			continue
		}
		sum := sha256.Sum256(b)
		out[f.field] = hex.EncodeToString(sum[:])
	}
	return out
}

// tlsRewritten names the TLS files whose content differs from what serve
// read at start (read, as digested by tlsDigests) though next names the
// same paths: a renewed certificate, a client CA replaced to revoke one,
// written in place, that only a restart puts in use.
func tlsRewritten(read map[string]string, running, next config.TLS) []string {
	if read == nil || running.CertFile != next.CertFile || running.KeyFile != next.KeyFile || running.ClientCAFile != next.ClientCAFile {
		return nil // other paths: restartOnly says auth/tls changed
	}
	var out []string
	for field, sum := range tlsDigests(next) {
		if sum != read[field] {
			out = append(out, field)
		}
	}
	slices.Sort(out)
	return out
}

// A pendingReload is a configuration read and checked, waiting to be
// applied to the engine.
type pendingReload struct {
	next *config.Config
	why  string
	read uint64 // reloader.read when it was read
}

// reload reads the file, checks it, rotates the token, and hands it to
// apply (or, without a running apply goroutine, applies it itself). A
// file that does not load or validate is refused: the error is logged
// and counted, and the running configuration stays. Settings that cannot
// change while serving are logged and keep their running value.
//
// The token rotates here, as the file is read, not when the engine has
// applied it: an engine reload that stops servers waits for the requests
// on them (up to a minute), and a leaked token rotated meanwhile would
// wait as long behind it.
func (r *reloader) reload(ctx context.Context, why string) error {
	data, err := config.ReadRegular(r.path)
	return r.reloadRead(ctx, why, data, err)
}

// reloadRead is reload of data, the file's content as read (readErr: why
// it could not be), so that what is applied is what was checked.
func (r *reloader) reloadRead(ctx context.Context, why string, data []byte, readErr error) error {
	seq := r.read.Add(1)
	next, err := (*config.Config)(nil), readErr
	if err == nil {
		next, err = config.LoadData(r.path, data)
	}
	if err == nil {
		r.flags(next)
		err = next.Auth.CheckListen(next.Listen)
	}
	if err != nil {
		r.log.Error("config reload refused; the running configuration is kept, its auth token too", "why", why, "config", r.path, "err", err)
		r.outcome.Lock()
		r.refusedAt.Store(seq)
		r.m.Reloaded(err)
		r.refused(refusal(r.path, err))
		r.outcome.Unlock()
		return err
	}
	for _, w := range next.Warnings {
		r.log.Warn("config: " + w)
	}
	dropSelf(next, r.log)
	if r.running == nil {
		r.running = r.cur
	}
	for _, key := range restartOnly(r.running, next) {
		r.log.Warn("config reload: this setting changed but takes effect only when contextd restarts", "setting", key)
	}
	for _, field := range tlsRewritten(r.tlsRead, r.running.Auth.TLS, next.Auth.TLS) {
		r.log.Warn("config reload: this TLS file changed on disk but is read only at start: restart contextd to use it", "setting", field)
	}
	// The token first: a reload the engine fails part way (a server
	// it could not drop) must not leave a leaked token working.
	r.rotate(next)
	p := pendingReload{next: next, why: why, read: seq}
	if r.pending == nil {
		return r.apply(ctx, p)
	}
	// The latest replaces one not yet taken: it holds every change.
	select {
	case <-r.pending:
	default:
	}
	r.pending <- p
	return nil
}

// applyLoop applies the configurations reload hands over, one at a time,
// until ctx ends.
func (r *reloader) applyLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-r.pending:
			_ = r.apply(ctx, p)
		}
	}
}

// apply makes p's configuration the engine's, and the one in use.
func (r *reloader) apply(ctx context.Context, p pendingReload) error {
	next, why := p.next, p.why
	ch, err := r.eng.Reload(ctx, next)
	for _, key := range ch.Restart {
		r.log.Warn("config reload: this setting changed but takes effect only when contextd restarts", "setting", key)
	}
	if err != nil {
		if ctx.Err() != nil {
			// The daemon is stopping: no failure of the file's.
			r.log.Info("config reload cut short: contextd is stopping", "why", why)
			return err
		}
		r.log.Error("config reload failed part way", "why", why, "err", err)
		r.m.Reloaded(err)
		return err
	}
	r.cur = next
	r.m.Forget(ch.Removed...)
	// A file refused since this one was read is what the file on disk
	// is: its refusal stays shown, and counted as the last reload.
	r.outcome.Lock()
	if r.refusedAt.Load() < p.read {
		r.m.Reloaded(nil)
		r.refused("")
	}
	r.outcome.Unlock()
	r.log.Info("config reloaded", "why", why, "config", r.path, "added", ch.Added, "removed", ch.Removed, "changed", ch.Changed, "kept", ch.Kept)
	return nil
}

// rotate makes next's token the one every call must bring, when both the
// running configuration and next have one: a leaked token, replaced in its
// file or variable and reloaded, is refused from the next call on. Adding
// or removing the token changes who may call at all: that waits for a
// restart (see restartOnly).
func (r *reloader) rotate(next *config.Config) {
	was, now := r.token.Get(), next.Auth.Token
	if r.token == nil || was == "" || now == "" || now == was {
		return
	}
	r.token.Set(now)
	running := *r.running
	running.Auth.Token, running.Auth.TokenFile = now, next.Auth.TokenFile
	r.running = &running
	r.log.Info("config reload: the auth token changed; calls with the one before it are refused from now on", "token_file", next.Auth.TokenFile)
}

// errLine finds the line an error names.
var errLine = regexp.MustCompile(`\bline (\d+)\b`)

// refusal is what every caller is told of a refused reload: the file and
// the line, not the error, which may quote what was written there (a key
// typed where a field's name or another type belongs), masked only when
// it is a known credential; the log has it.
func refusal(path string, err error) string {
	where := filepath.Base(path)
	if m := errLine.FindStringSubmatch(err.Error()); m != nil {
		where += ", line " + m[1]
	}
	return "config reload refused (" + where + "); the running configuration is kept, its auth token too, and the daemon's log says why"
}

// authOnRestart returns a less what a reload applies when b is what it
// changes to: a token replacing another (see reloader.rotate).
func authOnRestart(a, b config.Auth) config.Auth {
	if a.Token != "" && b.Token != "" {
		a.Token, a.TokenFile = "", ""
	}
	return a
}

// restartOnly names serve's settings that differ between cur and next and
// are read once, at start: the listeners, access control, admission, log
// format. (The engine reports its own: data_dir, tokenizer, embedder.)
func restartOnly(cur, next *config.Config) []string {
	var out []string
	for _, s := range []struct {
		key  string
		a, b any
	}{
		{"listen", cur.Listen, next.Listen},
		{"mcp_listen", cur.MCPListen, next.MCPListen},
		{"mcp_path", cur.MCPPath, next.MCPPath},
		{"auth, tls or allow_insecure_listen", authOnRestart(cur.Auth, next.Auth), authOnRestart(next.Auth, cur.Auth)},
		{"max_concurrent_requests", cur.Limits.MaxConcurrent, next.Limits.MaxConcurrent},
		{"max_queued_requests", cur.Limits.MaxQueued, next.Limits.MaxQueued},
		{"metrics_listen, metrics_pprof or allow_insecure_metrics", [3]any{cur.Ops.MetricsListen, cur.Ops.Pprof, cur.Ops.AllowInsecureMetrics},
			[3]any{next.Ops.MetricsListen, next.Ops.Pprof, next.Ops.AllowInsecureMetrics}},
		{"log_format", cur.Ops.LogFormat, next.Ops.LogFormat},
		{"max_connections, idle_timeout or handshake_timeout", cur.Conns, next.Conns},
	} {
		if !reflect.DeepEqual(s.a, s.b) {
			out = append(out, s.key)
		}
	}
	return out
}

// watcher is what reloader.watch listens to: SIGHUP, and the directories
// that decide the file's content (see linkChain) or, when those cannot be
// watched, a poll ticker.
type watcher struct {
	hup chan os.Signal
	fs  *fsnotify.Watcher // nil when polling only
	// poll ticks every pollEvery when fs is nil, or while some directory
	// of the path cannot be watched (polling); it is stopped otherwise.
	poll    *time.Ticker
	polling bool
	// watchDir adds a directory to fs (fs.Add; tests make it fail).
	watchDir func(dir string) error
	log      *slog.Logger
	// names are the entries the path goes through (see linkChain): an
	// event naming one is a write of the file, or a change of a link
	// along it.
	names map[string]bool
}

// startWatch starts listening for SIGHUP (from now on SIGHUP no longer
// stops the process) and for changes of path. Close the watcher when done.
func startWatch(path string, log *slog.Logger) *watcher {
	w := &watcher{hup: make(chan os.Signal, 1), log: log, names: map[string]bool{}, poll: time.NewTicker(pollEvery)}
	signal.Notify(w.hup, syscall.SIGHUP)
	if path == "" {
		w.poll.Stop()
		return w
	}
	// Directories, not the file: editors and ConfigMaps replace the file
	// rather than write it in place.
	fw, err := fsnotify.NewWatcher()
	dirs, names := linkChain(path)
	w.setNames(names)
	if err == nil && len(dirs) == 0 {
		err = errors.New("its directory cannot be found")
		fw.Close()
	}
	if err == nil {
		for _, d := range dirs {
			if err = fw.Add(d); err != nil {
				err = fmt.Errorf("%s: %w", d, err)
				fw.Close()
				break
			}
		}
	}
	if err != nil {
		log.Warn("cannot watch the config file; checking it every "+pollEvery.String(), "config", path, "err", err)
		return w
	}
	w.poll.Stop()
	w.fs, w.watchDir = fw, fw.Add
	return w
}

// setNames makes names the entries events are told apart by.
func (w *watcher) setNames(names []string) {
	clear(w.names)
	for _, n := range names {
		w.names[n] = true
	}
}

// touches reports whether ev names an entry the path goes through.
func (w *watcher) touches(ev fsnotify.Event) bool {
	return w.names[filepath.Clean(ev.Name)]
}

// follow makes the directories watched those that decide path's content
// now (see linkChain): a link along the path repointed, a directory
// removed and created again, moves the file to directories not watched
// before, and those it left are watched no longer.
func (w *watcher) follow(path string) {
	if w.fs == nil {
		return
	}
	want, names := linkChain(path)
	if len(want) == 0 {
		return
	}
	w.setNames(names)
	have := w.fs.WatchList()
	var failed error
	for _, d := range want {
		if slices.Contains(have, d) {
			continue
		}
		if err := w.watchDir(d); err != nil && failed == nil {
			failed = fmt.Errorf("%s: %w", d, err)
		}
	}
	if failed != nil {
		// The directories watched still show what they can: kept, and
		// the file is checked every pollEvery as well until the path
		// can be watched whole (a directory on it made unreadable a
		// moment, say).
		if !w.polling {
			w.polling = true
			w.poll.Reset(pollEvery)
			w.log.Warn("cannot watch a directory the config file's path goes through; checking the file every "+pollEvery.String()+" until it can", "err", failed)
		}
		return
	}
	for _, d := range have {
		if !slices.Contains(want, d) {
			_ = w.fs.Remove(d)
		}
	}
	if w.polling {
		w.polling = false
		w.poll.Stop()
		w.log.Info("watching the config file's path again")
	}
}

// Close stops listening.
func (w *watcher) Close() {
	signal.Stop(w.hup)
	if w.fs != nil {
		w.fs.Close()
	}
	w.poll.Stop()
}

// watch reloads on SIGHUP and when the file's content changes, until ctx
// ends. A change is a change of the file's SHA-256, so events that leave it
// as it was (a touch, an editor's backup file beside it) reload nothing;
// SIGHUP always reloads.
func (r *reloader) watch(ctx context.Context, w *watcher) {
	r.pending = make(chan pendingReload, 1)
	var applying sync.WaitGroup
	applying.Go(func() { r.applyLoop(ctx) })
	defer applying.Wait()
	last := r.loaded
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w.fs != nil {
		events, errs = w.fs.Events, w.fs.Errors
	}
	poll := w.poll.C // ticks only while polling (see watcher.poll)
	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	var seen os.FileInfo // the file when last hashed
	changed := func() bool {
		// Events for any file in the directory (for ~/.claude.json, the
		// home directory) come here: a file that is the one last hashed,
		// of the same size and modification time, is not hashed again
		// (tens of megabytes, at every burst). One modified within the
		// last seconds is, as an edit in the same tick of a coarse clock
		// keeps the time.
		fi, err := os.Stat(r.path)
		if err == nil && seen != nil && os.SameFile(fi, seen) && fi.Size() == seen.Size() && fi.ModTime().Equal(seen.ModTime()) && time.Since(fi.ModTime()) > racyModTime {
			return false
		}
		seen = nil
		if err == nil {
			seen = fi
		}
		h := fileHash(r.path)
		if h == last {
			return false
		}
		last = h
		return true
	}
	// changedAt is when the file was last seen to change to what is not
	// yet applied (zero: nothing waits); it is applied once it has stayed
	// the same for reloadSettle, with no event naming it (or a link on
	// its path) since: checks are samples, and a file rewritten in place
	// faster than they come would show the same cut content at each.
	// eventAt is when the first event not yet checked came: events (of
	// any file in the directory) put the check off by reloadDebounce, but
	// not past maxEventWait after it, so a directory written to without
	// pause does not put a reload off for ever. touchedAt is when the
	// last event naming the file, or a link on its path, came.
	var changedAt, eventAt, touchedAt time.Time
	settle := func() {
		eventAt = time.Time{}
		w.follow(r.path)
		if changedAt.IsZero() {
			if !changed() {
				return
			}
			changedAt = time.Now()
			debounce.Reset(reloadSettle)
			return
		}
		// The bytes hashed are those applied: a writer starting again
		// between a check and a read of its own would have its cut file
		// applied.
		data, h, err := readHashed(r.path)
		if h != last || touchedAt.After(changedAt) {
			last, changedAt = h, time.Now() // changed again: wait again
			debounce.Reset(reloadSettle)
			return
		}
		if wait := reloadSettle - time.Since(changedAt); wait > 0 {
			debounce.Reset(wait)
			return
		}
		changedAt = time.Time{}
		_ = r.reloadRead(ctx, "file changed", data, err)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.hup:
			w.follow(r.path)
			data, h, err := readHashed(r.path)
			last, changedAt = h, time.Time{}
			_ = r.reloadRead(ctx, "SIGHUP", data, err)
		case ev := <-events:
			now := time.Now()
			if w.touches(ev) {
				touchedAt = now
			}
			if eventAt.IsZero() {
				eventAt = now
			}
			delay := min(reloadDebounce, eventAt.Add(maxEventWait).Sub(now))
			if !changedAt.IsZero() { // nor past the settle's end
				delay = min(delay, changedAt.Add(reloadSettle).Sub(now))
			}
			debounce.Reset(max(delay, 0))
		case err := <-errs:
			r.log.Warn("config watch", "err", err)
		case <-poll:
			settle()
		case <-debounce.C:
			settle()
		}
	}
}

// racyModTime is how recent a modification time may be for the file to be
// hashed even though its size and time are those it had when last hashed.
const racyModTime = 3 * time.Second

// readHashed returns the content of the file at path as
// config.ReadRegular does, and its hash as fileHash gives it ("" with the
// error).
func readHashed(path string) ([]byte, string, error) {
	data, err := config.ReadRegular(path)
	if err != nil {
		return nil, "", err
	}
	return data, fmt.Sprintf("%x", sha256.Sum256(data)), nil
}

// fileHash returns the SHA-256 of path's content, or "" when it cannot be
// read (a rename in progress: the next event reads it again) or is not a
// regular file of at most config.MaxReloadBytes (a FIFO is not waited on).
func fileHash(path string) string {
	f, err := config.OpenRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if n, err := io.Copy(h, io.LimitReader(f, config.MaxReloadBytes+1)); err != nil || n > config.MaxReloadBytes {
		return ""
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// ignoreHangup keeps SIGHUP from stopping a daemon that runs on the
// built-in configuration (there is no file to re-read), until ctx ends.
func ignoreHangup(ctx context.Context, w *watcher, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.hup:
			log.Warn("SIGHUP: no config file to reload (running on the built-in configuration)")
		}
	}
}
