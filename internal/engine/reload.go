package engine

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/redact"
	ctxsync "github.com/contextd/contextd/internal/sync"
)

// ReloadDrain bounds how long Reload waits for the requests that began
// before it to finish before it stops the mirrors it replaced; a read
// still running then fails as read_failed.
const ReloadDrain = 2 * DefaultReadTimeout

// Changes is what a Reload did.
type Changes struct {
	// Added, Removed and Changed name servers, sorted. An added server's
	// mirror starts; a removed one's stops and its descriptors leave the
	// index; a changed one (any field of its entry differs) stops and a new
	// mirror starts, keeping the index entries until its first sync
	// replaces them.
	Added, Removed, Changed []string
	// Kept counts the servers whose entry is the same: their mirrors and
	// sessions go on untouched.
	Kept int
	// Restart names the settings that differ but take effect only when the
	// process restarts (data_dir, tokenizer, embedder): the engine keeps
	// the values it started with.
	Restart []string
}

// Empty reports whether the reload changed no server.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Removed)+len(c.Changed) == 0 }

// Reload makes cfg the engine's configuration while it serves: servers
// added to it start, servers gone from it stop and their descriptors leave
// the index, servers whose entry changed restart (so do all servers when
// poll_interval or max_message_bytes changed), and the others keep their
// sessions. The request limits (max_pins, max_reads, max_response_bytes)
// apply to requests that begin after Reload installs cfg. Requests in
// flight finish on the mirrors they began with: Reload waits for them, at
// most ReloadDrain, before it stops the mirrors it replaced (it does not
// wait when it replaces none), and returns
// once those have stopped and the removed servers have left the index.
// Settings that need a restart are reported in Changes.Restart and not
// applied.
//
// Reloads run one at a time. Errors: ctx's (the new configuration is
// installed, but a removed server may keep its descriptors until the next
// start), or the index's while dropping a removed server.
func (e *Engine) Reload(ctx context.Context, cfg *config.Config) (Changes, error) {
	e.reloadMu.Lock()
	defer e.reloadMu.Unlock()

	old := e.set()
	var ch Changes
	for _, f := range restartOnly {
		if f.get(old.cfg) != f.get(cfg) {
			ch.Restart = append(ch.Restart, f.key)
		}
	}
	written := cfg
	cfg = keepRestartOnly(old.cfg, cfg)
	all := cfg.PollInterval != old.cfg.PollInterval || cfg.MaxMessageBytes != old.cfg.MaxMessageBytes

	// The store, the embedder and auth stay as they were (restart-only):
	// their secrets are cfg's, kept from the old configuration. The ones
	// written in the file but not yet in use (a new auth token, the
	// next store's password) are secrets already, and masked too.
	secrets := cfg.Secrets()
	for _, s := range written.Secrets() {
		if !slices.Contains(secrets, s) {
			secrets = append(secrets, s)
		}
	}
	secrets = keptSecrets(old.secrets, secrets, os.Environ())
	next := &serverSet{cfg: cfg, mirrors: make(map[string]*ctxsync.Mirror, len(cfg.Servers)), limits: cfg.Limits.WithDefaults(), secrets: secrets, red: redact.New(secrets...), callers: callerRedactor(cfg), given: givenRedactors(cfg, secrets)}
	var stop []*ctxsync.Mirror
	// A stdio server kept running holds the environment it started with:
	// if this configuration withholds more of it (a variable whose value
	// is now a secret), it is restarted, to inherit less.
	narrowed := !slices.Equal(mcp.InheritedEnv(os.Environ(), old.secrets), mcp.InheritedEnv(os.Environ(), secrets))
	for _, srv := range cfg.Servers {
		next.names = append(next.names, srv.Name)
		was, ok := old.cfg.Server(srv.Name)
		switch {
		case !ok:
			ch.Added = append(ch.Added, srv.Name)
		case all || !reflect.DeepEqual(was, srv) || narrowed && srv.Transport == config.TransportStdio:
			ch.Changed = append(ch.Changed, srv.Name)
			stop = append(stop, old.mirrors[srv.Name])
		default:
			// Kept running: a server may hold a secret this
			// configuration adds (inherited before it was one).
			next.mirrors[srv.Name] = old.mirrors[srv.Name]
			next.mirrors[srv.Name].SetRedact(next.given[srv.Name])
			ch.Kept++
			continue
		}
		next.mirrors[srv.Name] = e.newMirror(next, srv)
	}
	for _, name := range old.names {
		if _, ok := next.mirrors[name]; !ok {
			ch.Removed = append(ch.Removed, name)
			stop = append(stop, old.mirrors[name])
		}
	}
	slices.Sort(ch.Added)
	slices.Sort(ch.Changed)

	// Install the new set; requests from now on see it. A request that
	// began before still finds the mirrors it may read, in retired.
	if e.shared != nil {
		e.shared.rep.SetServers(next.names)
	}
	e.logRed.Store(next.red)
	// A server removed is forgotten: what its name was withheld or
	// frozen for was another server's doing if it comes back, and the
	// reads of its resources contextd served are no longer contextd's to
	// be passed back (a server renamed serves them all). One changed
	// keeps its marks (a rotated credential, a setting: the same server);
	// one pointed at another endpoint is the MCP server's to judge afresh
	// (see mcp.ServedLists.Repointed).
	for _, name := range ch.Removed {
		e.served.Removed(name)
	}
	e.setMu.Lock()
	e.cur = next
	for _, m := range stop {
		if _, replaced := next.mirrors[m.Status().Server]; !replaced {
			e.retired[m.Status().Server] = m
		}
	}
	e.setMu.Unlock()
	e.runMu.Lock()
	if e.spawn != nil {
		for _, name := range slices.Concat(ch.Added, ch.Changed) {
			m := next.mirrors[name]
			e.runs[m] = e.spawn(m)
		}
	}
	e.runMu.Unlock()

	// Wait for the requests that began under the old set, if a mirror
	// they may read is to stop. A reload that stops none (nothing
	// changed, or servers only added) does not wait: reloads run one at
	// a time, and one waiting on a slow request held the next back (a
	// token rotated after it stayed unapplied for as long).
	if len(stop) > 0 {
		drained := make(chan struct{})
		go func() {
			old.inflight.Wait()
			close(drained)
		}()
		t := time.NewTimer(ReloadDrain)
		select {
		case <-drained:
		case <-t.C:
			e.log.Warn("reload: requests still running after the drain time; stopping the replaced servers under them", "drain", ReloadDrain)
		case <-ctx.Done():
		}
		t.Stop()
	}

	e.runMu.Lock()
	var runs []*mirrorRun
	for _, m := range stop {
		if r := e.runs[m]; r != nil {
			runs = append(runs, r)
			delete(e.runs, m)
		}
	}
	e.runMu.Unlock()
	for _, r := range runs {
		r.cancel()
	}
	for _, r := range runs {
		select {
		case <-r.done:
		case <-ctx.Done():
			return ch, ctx.Err()
		}
	}
	e.setMu.Lock()
	for _, name := range ch.Removed {
		delete(e.retired, name)
	}
	e.setMu.Unlock()
	if err := ctx.Err(); err != nil {
		return ch, err
	}
	for _, name := range ch.Removed {
		if _, err := e.ix.Replace(ctx, name, nil); err != nil {
			return ch, fmt.Errorf("reload: drop server %q from the index: %w", name, err)
		}
	}
	return ch, nil
}

// restartOnly are the engine's settings Reload does not apply.
var restartOnly = []struct {
	key string
	get func(*config.Config) string
}{
	{"data_dir", func(c *config.Config) string { return c.DataDir }},
	{"tokenizer", func(c *config.Config) string { return c.Tokenizer }},
	{"embedder", func(c *config.Config) string { return c.Embedder }},
}

// keepRestartOnly returns a copy of next with the restart-only settings of
// cur, so the engine's configuration says what it runs with.
func keepRestartOnly(cur, next *config.Config) *config.Config {
	c := *next
	c.DataDir, c.Tokenizer, c.Embedder = cur.DataDir, cur.Tokenizer, cur.Embedder
	// The daemon keeps serving with the token it started with (auth is
	// restart-only for serve): that token stays the one masked, screened
	// from template values and withheld from stdio servers.
	c.Auth = cur.Auth
	c.Servers = slices.Clone(next.Servers)
	return &c
}

// Config returns the configuration the engine serves now (the last one
// Reload installed), with the restart-only settings it started with. The
// caller must not modify it.
func (e *Engine) Config() *config.Config { return e.set().cfg }

// keptSecrets returns the credentials a new configuration masks and
// withholds (see serverSet.secrets): its own, and those of the ones before
// that the daemon's environment still holds (env: "KEY=value" entries),
// whole or inside a value: a removed server's ${VAR} credential stays
// there, and must not reach the servers that remain. Rotated credentials
// the environment never held are dropped, so that reloads do not add up.
func keptSecrets(old, cur, env []string) []string {
	out := slices.Clone(cur)
	for _, s := range old {
		if slices.Contains(out, s) {
			continue
		}
		if slices.ContainsFunc(env, func(kv string) bool {
			_, v, _ := strings.Cut(kv, "=")
			return strings.Contains(v, s)
		}) {
			out = append(out, s)
		}
	}
	return out
}
