package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/selector"
)

// A server that answers every read just within the read timeout cannot
// hold one Assemble (and its turn) for max_reads read timeouts: the reads
// of one request share a time budget, and what is left unread when it runs
// out is omitted as read_failed.
func TestSlowButNotSilentServerCannotStretchAnAssemble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const readTimeout = 5 * time.Second
		eng := slowEngine(t, 40, readTimeout-100*time.Millisecond, func(uri string) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: "a short note on the architecture"}}}, nil
		}, engine.Options{ReadTimeout: readTimeout, RequestReadTime: 12 * time.Second})
		start := time.Now()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000})
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if max := 12*time.Second + time.Second; el > max {
			t.Errorf("Assemble took %v over %d reads, want at most %v", el, res.Reads, max)
		}
		if len(res.Items) == 0 {
			t.Error("nothing was read within the request's time")
		}
		cut := 0
		for _, o := range res.Omitted {
			if o.Reason == selector.OmitReadFailed && strings.Contains(o.Detail, "time") {
				cut++
			}
		}
		if cut == 0 {
			t.Errorf("no candidate omitted for the request's read time: %+v", res.Omitted)
		}
	})
}

// A server that answers each read in a little under the lateness that
// starts a slow spell (a quarter of the read timeout) cannot take a whole
// request's read time one read after another: once it has answered at a
// low rate, its reads in the request share that lateness, and its later
// candidates are skipped. Ten such reads took the request's whole read
// time. No spell starts from answers that brought something: an honest
// server answering in 3 s, past the spell's 2 s reads, would otherwise
// give other callers nothing for a minute after each such request. One
// whose answers all were errors is read with the spell's timeout by the
// next request: each paid its share again.
func TestAnswersLateInAllSkipTheServersLaterReads(t *testing.T) {
	for _, kind := range []string{"text", "error"} {
		t.Run(kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { lateInAll(t, kind) })
		})
	}
}

func lateInAll(t *testing.T, kind string) {
	const readTimeout, each = 30 * time.Second, 3 * time.Second // lateness: 7.5 s
	eng := slowEngine(t, 10, each, func(uri string) (*mcpsdk.ReadResourceResult, error) {
		if kind == "error" {
			return nil, fmt.Errorf("not now")
		}
		return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: "a short note on the architecture of " + uri}}}, nil
	}, engine.Options{ReadTimeout: readTimeout})
	wantItems := 2
	if kind == "error" {
		wantItems = 0
	}
	for i := range 2 {
		start := time.Now()
		res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000})
		if err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		if len(res.Items) != wantItems {
			t.Errorf("Assemble %d: %d items, want %d", i, len(res.Items), wantItems)
		}
		skipped, spelled := 0, 0
		for _, o := range res.Omitted {
			if o.Reason == selector.OmitReadFailed && strings.Contains(o.Detail, "skipped: its reads in this request took") {
				skipped++
			}
			if o.Reason == selector.OmitReadFailed && strings.Contains(o.Detail, "has been slow") {
				spelled++
			}
		}
		if kind == "error" && i == 1 {
			// The spell's one read of 2 s, the rest skipped.
			if el != engine.DefaultSlowReadTimeout || spelled == 0 {
				t.Errorf("Assemble %d took %v over %d reads (%d read with the spell's timeout), want the slow spell's %v", i, el, res.Reads, spelled, engine.DefaultSlowReadTimeout)
			}
			continue
		}
		// Two answers (6 s), then what is left of the 7.5 s share (a
		// little more for the bytes the answers brought).
		if el < readTimeout/4 || el > readTimeout/4+10*time.Millisecond {
			t.Errorf("Assemble %d took %v over %d reads, want the server's share, %v", i, el, res.Reads, readTimeout/4)
		}
		if skipped == 0 {
			t.Errorf("Assemble %d: no candidate skipped for the server's late answers: %+v", i, res.Omitted)
		}
	}
}

// A request's reads end before the caller's deadline, with a margin for
// packing, so the caller gets what was read: a caller waiting as long as
// the request's read time got DEADLINE_EXCEEDED and nothing.
func TestReadsEndBeforeTheCallersDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const each = 3 * time.Second
		eng := slowEngine(t, 4, each, func(uri string) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: "a short note on the architecture of " + uri}}}, nil
		}, engine.Options{ReadTimeout: 30 * time.Second})
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		res, err := eng.Assemble(ctx, engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000})
		if err != nil {
			t.Fatalf("Assemble with a 5 s deadline over 3 s reads: %v", err)
		}
		if len(res.Items) != 1 {
			t.Errorf("%d items, want the one read before the deadline's margin", len(res.Items))
		}
	})
}

// An error answered late starts a slow spell as a late answer does: a
// server answering every read with an error after 29 s otherwise took
// 29 s of every request that ranked it.
func TestLateErrorsStartASlowSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const readTimeout, late = 30 * time.Second, 8 * time.Second
		eng := slowEngine(t, 4, late, func(uri string) (*mcpsdk.ReadResourceResult, error) {
			return nil, fmt.Errorf("not now")
		}, engine.Options{ReadTimeout: readTimeout})
		wantAssembleTimes(t, eng, late, engine.DefaultSlowReadTimeout, engine.DefaultSlowReadTimeout)
	})
}

// slowEngine returns an engine over one server, "slow", listing n
// resources doc://architecture-I ("architecture notes"), each read
// answered by answer after wait; its texts are not indexed. Of
// opts.Config only Limits is kept.
func slowEngine(t *testing.T, n int, wait time.Duration, answer func(uri string) (*mcpsdk.ReadResourceResult, error), opts engine.Options) *engine.Engine {
	slow := mcptest.NewServer(nil, nil)
	for i := range n {
		slow.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://architecture-%d", i), Name: "architecture notes"},
			func(ctx context.Context, r *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
				select {
				case <-time.After(wait):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return answer(r.Params.URI)
			})
	}
	var lim config.Limits
	if opts.Config != nil {
		lim = opts.Config.Limits
	}
	opts.Config = &config.Config{Servers: []config.Server{{Name: "slow", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true}}, Limits: lim}
	return newEngineOpts(t, "", map[string]*mcpsdk.Server{"slow": slow}, opts)
}

// An answer the request cannot use (over what it has left of
// max_response_bytes, or over the message cap) takes its time all the
// same: late, it starts a spell, and it counts in the server's share. It
// did neither, so a server answering every read after 22 s with more
// than the request could take held each request for its whole read
// time.
func TestLateAnswersThatDoNotFitCountAsLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const readTimeout, late, limit = 30 * time.Second, 8 * time.Second, 10000
		eng := slowEngine(t, 10, late, func(uri string) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: strings.Repeat("architecture ", limit/10)}}}, nil
		}, engine.Options{ReadTimeout: readTimeout, Config: &config.Config{Limits: config.Limits{MaxResponseBytes: limit}}})
		wantAssembleTimes(t, eng, late, engine.DefaultSlowReadTimeout)
	})
}

// A late answer of blobs the request drops is late all the same: its
// bytes, which nobody uses, do not excuse its lateness as a large read's
// do. 2 MB of blob at 26 s kept every request waiting 26 s, no spell.
func TestLateBlobsTheRequestDropsStartASpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const readTimeout, late = 30 * time.Second, 8 * time.Second
		eng := slowEngine(t, 10, late, func(uri string) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, MIMEType: "text/plain", Blob: make([]byte, 1<<20)}}}, nil
		}, engine.Options{ReadTimeout: readTimeout})
		wantAssembleTimes(t, eng, late, engine.DefaultSlowReadTimeout)
	})
}

// wantAssembleTimes runs one Assemble of "architecture notes" per wanted
// duration, in turn, and checks each took exactly that (in a synctest
// bubble).
func wantAssembleTimes(t *testing.T, eng *engine.Engine, want ...time.Duration) {
	t.Helper()
	for i, w := range want {
		start := time.Now()
		if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000}); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el != w {
			t.Errorf("Assemble %d took %v, want %v", i, el, w)
		}
	}
}

// Servers whose reads hang, three of them ranked first, cannot keep every
// request's reads to themselves: a read cut by the request's read time
// after waiting longer than any honest answer takes (the lateness of one
// read) starts a slow spell as a read that times out does. Before, the
// last hung server of each request was always cut, started no spell, and
// took the next request's time while the others' spells ran out: every
// request spent its whole read time on them and read the honest server's
// candidates never.
func TestHungServersDoNotTakeEveryRequestsReads(t *testing.T) {
	for _, hung := range []int{3, 5} {
		t.Run(fmt.Sprint(hung), func(t *testing.T) { hungServers(t, hung) })
	}
}

func hungServers(t *testing.T, hung int) {
	synctest.Test(t, func(t *testing.T) {
		servers := map[string]*mcpsdk.Server{}
		cfg := &config.Config{}
		for h := range hung {
			name := fmt.Sprintf("h%d", h+1)
			s := mcptest.NewServer(nil, nil)
			for i := range 3 {
				s.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://%s-%d", name, i), Name: "architecture notes architecture"},
					func(ctx context.Context, _ *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
						<-ctx.Done()
						return nil, ctx.Err()
					})
			}
			servers[name] = s
			cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused", NoContentIndex: true})
		}
		honest := mcptest.NewServer(nil, nil)
		for i := range 5 {
			mcptest.AddText(honest, fmt.Sprintf("doc://honest-%d", i), "architecture", fmt.Sprintf("note %d on the architecture", i))
		}
		servers["honest"] = honest
		cfg.Servers = append(cfg.Servers, config.Server{Name: "honest", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true})
		eng := newEngineOpts(t, "", servers, engine.Options{Config: cfg, ReadTimeout: 30 * time.Second})
		// Each hung server gets reads of the full timeout less and less
		// often: after a few requests, the honest server is read by every
		// one, which then takes the spells' short reads only.
		var honestItems []int
		var took []time.Duration
		for range 12 {
			start := time.Now()
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000})
			if err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(start))
			n := 0
			for _, it := range res.Items {
				if it.Server == "honest" {
					n++
				}
			}
			honestItems = append(honestItems, n)
		}
		for i := 6; i < 12; i++ {
			if honestItems[i] == 0 || took[i] > time.Duration(hung+1)*engine.DefaultSlowReadTimeout {
				t.Fatalf("honest items per request: %v, times %v; want the honest server read, quickly, from the seventh on", honestItems, took)
			}
		}
	})
}

// A server that hung for a long while (its spells doubled up to 16
// minutes) and then answers each read in 3 s, more than a spell's reads
// get, is read again within a couple of minutes of its recovery: a read
// in the background, with the full timeout, probes it once a SlowFor
// during a spell. Its items came back 14.5 minutes after it recovered.
func TestARecoveredServerIsReadAgainSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hung atomic.Bool
		s := mcptest.NewServer(nil, nil)
		for i := range 3 {
			s.AddResource(&mcpsdk.Resource{URI: fmt.Sprintf("doc://s-%d", i), Name: "architecture notes architecture"},
				func(ctx context.Context, r *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
					wait := 3 * time.Second
					if hung.Load() {
						wait = time.Hour
					}
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-time.After(wait):
					}
					return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: r.Params.URI, Text: "note on the architecture " + r.Params.URI}}}, nil
				})
		}
		cfg := &config.Config{Servers: []config.Server{{Name: "s", Transport: config.TransportStdio, Command: "unused", NoContentIndex: true}}}
		eng := newEngineOpts(t, "", map[string]*mcpsdk.Server{"s": s}, engine.Options{Config: cfg})
		items := func() int {
			res, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000})
			if err != nil {
				t.Fatal(err)
			}
			return len(res.Items)
		}
		hung.Store(true)
		for start := time.Now(); time.Since(start) < 20*time.Minute; {
			items()
			time.Sleep(30 * time.Second)
		}
		hung.Store(false)
		start := time.Now()
		for items() == 0 {
			if time.Since(start) > 30*time.Minute {
				t.Fatal("not read again in 30 minutes")
			}
			time.Sleep(30 * time.Second)
		}
		back := time.Since(start)
		t.Logf("read again %v after it recovered", back)
		if back > 2*engine.DefaultSlowFor+time.Minute {
			t.Fatalf("read again %v after it recovered; want within %v", back, 2*engine.DefaultSlowFor+time.Minute)
		}
	})
}

// Two requests whose reads of a hung server time out together start one
// spell, not two: the second doubled the first, so a server that hung
// once was read with the short timeout for two minutes, not one.
func TestReadsTimingOutTogetherStartOneSpell(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const readTimeout = 30 * time.Second
		eng := slowEngine(t, 3, time.Hour, func(uri string) (*mcpsdk.ReadResourceResult, error) {
			return &mcpsdk.ReadResourceResult{Contents: []*mcpsdk.ResourceContents{{URI: uri, Text: "a note"}}}, nil
		}, engine.Options{ReadTimeout: readTimeout})
		assemble := func() {
			if _, err := eng.Assemble(t.Context(), engine.AssembleRequest{Query: "architecture notes", TokenBudget: 4000}); err != nil {
				t.Error(err)
			}
		}
		start := time.Now()
		var wg sync.WaitGroup
		wg.Go(assemble)
		wg.Go(assemble)
		wg.Wait()
		// The spell started when the reads timed out; once it has run its
		// minute, a read gets the full timeout again.
		time.Sleep(start.Add(readTimeout + engine.DefaultSlowFor + time.Second).Sub(time.Now()))
		began := time.Now()
		assemble()
		if el := time.Since(began); el < readTimeout-time.Second {
			t.Fatalf("a request after the spell's minute took %v: still in a spell (doubled by the second timeout)", el)
		}
	})
}
