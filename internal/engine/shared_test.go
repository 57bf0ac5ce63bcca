package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/contextd/contextd/internal/config"
	"github.com/contextd/contextd/internal/engine"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/mcp/mcptest"
	"github.com/contextd/contextd/internal/replica"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/service"
	"github.com/contextd/contextd/internal/store/pgstore/pgtest"
	ctxsync "github.com/contextd/contextd/internal/sync"
	contextdv1 "github.com/contextd/contextd/proto/contextd/v1"
)

// Lease times of the replica tests: a dead owner's servers are taken within
// testTTL + testRenew.
const (
	testTTL   = 2 * time.Second
	testRenew = 500 * time.Millisecond
	testPoll  = 200 * time.Millisecond
)

// upstreams is a set of fake upstream servers, each with one copy per
// replica (identical content), so the test sees which replica's sessions
// asked what.
type upstreams struct {
	names  []string
	copies map[string][]*mcpsdk.Server    // server → per replica
	recs   map[string][]*mcptest.Recorder // server → per replica
	docs   map[string]map[string]string   // server → uri → text
	// sessions counts the sessions replicas opened to the upstreams.
	sessions atomic.Int64
}

func newUpstreams(servers, replicas, docs int) *upstreams {
	u := &upstreams{copies: map[string][]*mcpsdk.Server{}, recs: map[string][]*mcptest.Recorder{}, docs: map[string]map[string]string{}}
	for s := range servers {
		name := fmt.Sprintf("up%d", s)
		u.names = append(u.names, name)
		d := map[string]string{}
		for i := range docs {
			d[fmt.Sprintf("doc://%s/%d", name, i)] = fmt.Sprintf("page %d of %s about topic%d", i, name, (s*docs+i)%13)
		}
		u.docs[name] = d
		for range replicas {
			srv := mcptest.NewServer(d, nil)
			rec := &mcptest.Recorder{}
			srv.AddReceivingMiddleware(rec.Middleware())
			u.copies[name] = append(u.copies[name], srv)
			u.recs[name] = append(u.recs[name], rec)
		}
	}
	return u
}

// add adds a resource to every copy of server.
func (u *upstreams) add(server, uri, text string) {
	u.docs[server][uri] = text
	for _, s := range u.copies[server] {
		mcptest.AddText(s, uri, uri, text)
	}
}

// lists returns how many resources/list requests each replica's copy of
// server received.
func (u *upstreams) lists(server string) []int {
	var out []int
	for _, r := range u.recs[server] {
		out = append(out, r.Count("resources/list"))
	}
	return out
}

var starts atomic.Int64

type testReplica struct {
	eng  *engine.Engine
	emb  *indextest.BagEmbedder
	stop func() // stops it as a crash would (leases left to expire)
}

// startReplica starts replica i of the store at url against its copies of
// the upstreams.
func startReplica(t testing.TB, url string, u *upstreams, i int, adjust ...func(*replica.Options)) *testReplica {
	t.Helper()
	cfg := &config.Config{Store: url}
	for _, name := range u.names {
		cfg.Servers = append(cfg.Servers, config.Server{Name: name, Transport: config.TransportStdio, Command: "unused"})
	}
	emb := &indextest.BagEmbedder{}
	opts := engine.Options{
		Config:   cfg,
		Embedder: emb,
		Dial: func(s config.Server) ctxsync.DialFunc {
			dial := mcptest.Dial(t, s.Name, u.copies[s.Name][i])
			return func(ctx context.Context, o *mcp.Options) (*mcp.Session, error) {
				u.sessions.Add(1)
				return dial(ctx, o)
			}
		},
		Mirror: func(o *ctxsync.Options) { o.Debounce = 20 * time.Millisecond },
		Replica: func(o *replica.Options) {
			o.Holder = fmt.Sprintf("r%d-%d", i, starts.Add(1)) // unique, as a restarted process's is
			o.LeaseTTL, o.RenewEvery, o.PollEvery = testTTL, testRenew, testPoll
			o.LeaveLeases = true
			if os.Getenv("CONTEXTD_TEST_REPLICA_LOG") != "" {
				o.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
			}
			for _, f := range adjust {
				f(o)
			}
		},
	}
	eng, err := engine.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = eng.Run(ctx) })
	var once sync.Once
	stop := func() { once.Do(func() { cancel(); wg.Wait(); eng.Close() }) }
	t.Cleanup(stop)
	return &testReplica{eng: eng, emb: emb, stop: stop}
}

// waitUntil polls cond every 10ms until it holds or d passes.
func waitUntil(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	return waitEvery(t, d, 10*time.Millisecond, what, cond)
}

// waitEvery polls cond every step until it holds or d passes.
func waitEvery(t testing.TB, d, step time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(step)
	}
	return time.Since(start)
}

// owners maps each server to the replicas that say they own it.
func owners(reps []*testReplica) map[string][]int {
	out := map[string][]int{}
	for i, r := range reps {
		if r == nil {
			continue
		}
		st, _ := r.eng.Replica()
		for _, s := range st.Owned {
			out[s] = append(out[s], i)
		}
	}
	return out
}

func searchHits(t *testing.T, e *engine.Engine, q string) []engine.Ranked {
	t.Helper()
	hits, err := e.Search(t.Context(), engine.SearchRequest{Query: q, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	return hits
}

func found(hits []engine.Ranked, uri string) bool {
	return slices.ContainsFunc(hits, func(h engine.Ranked) bool { return h.URI == uri })
}

func TestReplicasShareOneMirror(t *testing.T) {
	url := pgtest.URL(t)
	const nrep, nsrv, ndocs = 3, 4, 20
	u := newUpstreams(nsrv, nrep, ndocs)
	reps := make([]*testReplica, nrep)
	for i := range reps {
		reps[i] = startReplica(t, url, u, i)
	}
	total := nsrv * ndocs
	waitUntil(t, 10*time.Second, "every replica holds every upstream's descriptors and texts", func() bool {
		for _, r := range reps {
			if n, c := descCount(t, r.eng), textCount(r.eng); n != total || c != total {
				return false
			}
		}
		return len(owners(reps)) == nsrv
	})
	// Each upstream is mirrored by exactly one replica: it alone listed it.
	own := owners(reps)
	perReplica := make([]int, nrep)
	for _, s := range u.names {
		if len(own[s]) != 1 {
			t.Fatalf("server %s owned by replicas %v; want exactly one", s, own[s])
		}
		o := own[s][0]
		perReplica[o]++
		for i, n := range u.lists(s) {
			if (i == o) != (n > 0) {
				t.Errorf("server %s (owner r%d): replica r%d sent %d resources/list", s, o, i, n)
			}
		}
	}
	for i, n := range perReplica {
		if n > (nsrv+nrep-1)/nrep {
			t.Errorf("replica r%d owns %d servers, more than its fair share of %d", i, n, (nsrv+nrep-1)/nrep)
		}
	}
	// Vectors were computed by the owners only: a replica embedded as
	// many texts as its servers hold (descriptors and first passages),
	// never another's.
	for i, r := range reps {
		owned := perReplica[i] * ndocs
		if got := r.emb.Calls.Load(); got > int64(2*owned) {
			t.Errorf("replica r%d embedded %d texts for %d owned descriptors; others' were re-embedded", i, got, owned)
		}
	}
	// Every replica gives the same answer to the same query.
	for _, q := range []string{"topic3", "page 7 of up2", "topic11 about"} {
		want := searchHits(t, reps[0].eng, q)
		if len(want) == 0 {
			t.Fatalf("no hits for %q", q)
		}
		for i, r := range reps[1:] {
			if diff := cmp.Diff(want, searchHits(t, r.eng, q)); diff != "" {
				t.Errorf("replica r%d answers %q differently (-r0 +r%d):\n%s", i+1, q, i+1, diff)
			}
		}
	}
	// A list_changed reaches every replica's answers (how fast is for a
	// benchmark: under -race on a loaded machine it took 1.2 s once).
	start := time.Now()
	u.add("up1", "doc://up1/new", "zygomorphic flowers")
	for i, r := range reps {
		waitUntil(t, 5*time.Second, fmt.Sprintf("replica r%d finds the new resource", i), func() bool {
			return found(searchHits(t, r.eng, "zygomorphic flowers"), "doc://up1/new")
		})
	}
	t.Logf("list_changed reached all %d replicas in %v", nrep, time.Since(start))
	// A follower reads content at query time through a session of its own,
	// opened on demand.
	other := (own["up1"][0] + 1) % nrep
	got, _, err := reps[other].eng.Read(t.Context(), resource.Key{Server: "up1", URI: "doc://up1/new"})
	if err != nil || len(got) == 0 || got[0].Text != "zygomorphic flowers" {
		t.Fatalf("follower read = %+v, %v", got, err)
	}
	if n := u.lists("up1")[other]; n != 0 {
		t.Errorf("the follower's read session listed up1 %d times", n)
	}
}

func TestOwnerKilledIsTakenOverWithinTheLease(t *testing.T) {
	url := pgtest.URL(t)
	const nrep, nsrv = 3, 3
	u := newUpstreams(nsrv, nrep, 5)
	reps := make([]*testReplica, nrep)
	for i := range reps {
		reps[i] = startReplica(t, url, u, i)
	}
	waitUntil(t, 10*time.Second, "every server has an owner", func() bool { return len(owners(reps)) == nsrv })
	victim := owners(reps)["up0"][0]
	before := slices.Clone(u.lists("up0"))
	killed := time.Now()
	reps[victim].stop()
	reps[victim] = nil
	took := waitUntil(t, testTTL+testRenew+5*time.Second, "another replica owns and lists up0", func() bool {
		o := owners(reps)["up0"]
		if len(o) != 1 {
			return false
		}
		return u.lists("up0")[o[0]] > before[o[0]]
	})
	t.Logf("takeover (owner killed → the new owner listed) in %v; bound %v plus one sync", took, testTTL+testRenew)
	if took > testTTL+testRenew+time.Second {
		t.Errorf("takeover took %v; want within the lease bound %v plus a second for the sync", took, testTTL+testRenew)
	}
	_ = killed
	// Changes on up0 reach the survivors through the new owner.
	u.add("up0", "doc://up0/after", "quokka habitat")
	for i, r := range reps {
		if r == nil {
			continue
		}
		waitUntil(t, 5*time.Second, fmt.Sprintf("replica r%d finds the change made after the takeover", i), func() bool {
			// A replica that owned nothing before the takeover may not
			// have synced any server yet: unavailable until then.
			hits, err := r.eng.Search(t.Context(), engine.SearchRequest{Query: "quokka habitat", Limit: 5})
			return err == nil && found(hits, "doc://up0/after")
		})
	}
}

func TestRestartedReplicaServesWithoutEmbedding(t *testing.T) {
	url := pgtest.URL(t)
	u := newUpstreams(2, 2, 30)
	first := startReplica(t, url, u, 0)
	// Pending counts what waits and what is being written; a descriptor and
	// its text changed before one write go as one record.
	waitUntil(t, 10*time.Second, "the first replica mirrors and publishes everything", func() bool {
		st, _ := first.eng.Replica()
		return descCount(t, first.eng) == 60 && textCount(first.eng) == 60 && st.Pending == 0 && st.Published >= 60
	})
	want := searchHits(t, first.eng, "topic4")
	first.stop()
	second := startReplica(t, url, u, 1)
	if n := descCount(t, second.eng); n != 60 {
		t.Fatalf("restarted replica holds %d descriptors at start; want 60", n)
	}
	waitUntil(t, 10*time.Second, "the restarted replica owns both servers and synced", func() bool {
		return len(owners([]*testReplica{second})) == 2 && u.lists("up0")[1] > 0 && u.lists("up1")[1] > 0
	})
	time.Sleep(200 * time.Millisecond) // any embedding the syncs started
	if got := second.emb.Calls.Load(); got != 0 {
		t.Errorf("the restarted replica embedded %d texts; want 0", got)
	}
	if diff := cmp.Diff(want, searchHits(t, second.eng, "topic4")); diff != "" {
		t.Errorf("answers differ after the restart (-before +after):\n%s", diff)
	}
}

func descCount(t testing.TB, e *engine.Engine) int {
	t.Helper()
	ds, err := e.Descriptors("")
	if err != nil {
		t.Fatal(err)
	}
	return len(ds)
}

// textCount counts the resources with indexed text across e's servers.
func textCount(e *engine.Engine) int {
	n := 0
	for _, s := range e.Servers() {
		n += s.Contents
	}
	return n
}

// pgctl runs $CONTEXTD_TEST_PG_CTL (scripts/pg-test.sh) with arg, which
// stops or starts the test database; without it the test is skipped.
func pgctl(t *testing.T, arg string) {
	t.Helper()
	script := os.Getenv("CONTEXTD_TEST_PG_CTL")
	if script == "" {
		t.Skip("NOT TESTED: set CONTEXTD_TEST_PG_CTL=scripts/pg-test.sh to let this test stop and start the test database (it disturbs other tests using it: run it alone)")
	}
	out, err := exec.Command(script, arg).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, arg, err, out)
	}
}

func TestPostgresRestartedMidRunLosesNothing(t *testing.T) {
	if os.Getenv("CONTEXTD_TEST_PG_CTL") == "" {
		pgctl(t, "") // skips
	}
	url := pgtest.URL(t)
	u := newUpstreams(2, 2, 10)
	reps := []*testReplica{startReplica(t, url, u, 0), startReplica(t, url, u, 1)}
	waitUntil(t, 10*time.Second, "both replicas hold everything", func() bool {
		for _, r := range reps {
			if descCount(t, r.eng) != 20 || textCount(r.eng) != 20 {
				return false
			}
		}
		return len(owners(reps)) == 2
	})
	owner := owners(reps)["up0"][0]
	restarted := false
	defer func() {
		if !restarted {
			pgctl(t, "start")
		}
	}()
	pgctl(t, "stop")
	// Down: every replica answers from memory and says it is stale; the
	// owner goes on mirroring.
	u.add("up0", "doc://up0/during", "narwhal tusks")
	waitUntil(t, 5*time.Second, "the owner mirrors the change while the store is down", func() bool {
		return found(searchHits(t, reps[owner].eng, "narwhal tusks"), "doc://up0/during")
	})
	for i, r := range reps {
		if hits := searchHits(t, r.eng, "topic5"); len(hits) == 0 {
			t.Errorf("replica r%d answers nothing while the store is down", i)
		}
		waitUntil(t, 5*time.Second, fmt.Sprintf("replica r%d reports the store stale", i), func() bool {
			st, _ := r.eng.Replica()
			return st.Stale && st.LastError != ""
		})
		// Callers see it too, in ListServers.
		ls, err := service.New(r.eng, slog.New(slog.DiscardHandler)).ListServers(t.Context(), &contextdv1.ListServersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if st := ls.GetStore(); !st.GetStale() || st.GetLastError() == "" || st.GetReplica() == "" {
			t.Errorf("replica r%d: ListServers store = %v, want stale with the last error", i, st)
		} else if e := st.GetLastError(); strings.Contains(e, "user=") || strings.Contains(e, "127.0.0.1") {
			t.Errorf("replica r%d: ListServers store error %q quotes the connection's settings", i, e)
		}
	}
	time.Sleep(testTTL) // past the leases
	pgctl(t, "start")
	restarted = true
	for i, r := range reps {
		waitUntil(t, 15*time.Second, fmt.Sprintf("replica r%d finds what changed while the store was down", i), func() bool {
			return found(searchHits(t, r.eng, "narwhal tusks"), "doc://up0/during")
		})
		waitUntil(t, 5*time.Second, fmt.Sprintf("replica r%d is current again", i), func() bool {
			st, _ := r.eng.Replica()
			return !st.Stale && st.Pending == 0
		})
	}
	// Nothing lost or doubled: a new replica loads exactly the upstreams.
	fresh := startReplica(t, url, u, 0)
	ds, err := fresh.eng.Descriptors("")
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, d := range ds {
		got = append(got, d.URI)
	}
	for _, s := range u.names {
		for uri := range u.docs[s] {
			want = append(want, uri)
		}
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the store after the restart (-upstreams +stored):\n%s", diff)
	}
	if n := fresh.emb.Calls.Load(); n != 0 {
		t.Errorf("a replica started from the store embedded %d texts", n)
	}
}

// A replica that joins takes its fair share: the first hands servers over,
// and no server has two owners at any time.
func TestJoiningReplicaTakesItsShare(t *testing.T) {
	url := pgtest.URL(t)
	u := newUpstreams(4, 2, 5)
	reps := []*testReplica{startReplica(t, url, u, 0), nil}
	waitUntil(t, 10*time.Second, "the first replica owns every server", func() bool {
		st, _ := reps[0].eng.Replica()
		return len(st.Owned) == 4
	})
	reps[1] = startReplica(t, url, u, 1)
	waitUntil(t, 10*time.Second, "each replica owns two servers", func() bool {
		for _, o := range owners(reps) {
			if len(o) > 1 {
				t.Fatalf("a server has two owners: %v", owners(reps))
			}
		}
		st0, _ := reps[0].eng.Replica()
		st1, _ := reps[1].eng.Replica()
		return len(st0.Owned) == 2 && len(st1.Owned) == 2
	})
	st1, _ := reps[1].eng.Replica()
	for _, s := range st1.Owned {
		waitUntil(t, 5*time.Second, "the new owner lists "+s, func() bool { return u.lists(s)[1] > 0 })
	}
	// Both still answer alike.
	waitUntil(t, 5*time.Second, "both replicas answer alike", func() bool {
		return cmp.Equal(searchHits(t, reps[0].eng, "topic7"), searchHits(t, reps[1].eng, "topic7"))
	})
}

// A reload that adds a server to a replica's configuration makes the
// replica mirror it through the store; one that removes a server it owns
// hands that server over.
func TestReloadChangesTheServersAReplicaMayOwn(t *testing.T) {
	url := pgtest.URL(t)
	u := newUpstreams(2, 1, 10)
	all := u.names
	u.names = all[:1]
	r := startReplica(t, url, u, 0)
	waitUntil(t, 10*time.Second, "the replica owns up0", func() bool {
		st, _ := r.eng.Replica()
		return slices.Equal(st.Owned, []string{"up0"})
	})
	cfg := func(names ...string) *config.Config {
		c := &config.Config{Store: url}
		for _, n := range names {
			c.Servers = append(c.Servers, config.Server{Name: n, Transport: config.TransportStdio, Command: "unused"})
		}
		return c
	}
	if _, err := r.eng.Reload(t.Context(), cfg("up0", "up1")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the server the reload added is mirrored", func() bool {
		st, _ := r.eng.Replica()
		ds, err := r.eng.Descriptors("up1")
		return err == nil && len(ds) == 10 && slices.Contains(st.Owned, "up1")
	})
	if _, err := r.eng.Reload(t.Context(), cfg("up1")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 15*time.Second, "the server the reload removed is handed over", func() bool {
		st, _ := r.eng.Replica()
		return slices.Equal(st.Owned, []string{"up1"})
	})
}

// Replicas send one server callers' words unseen by each other, and the
// server may quote them to any: with a shared store, what a server says
// is withheld from the start, not only once this replica sent it a
// caller's words.
func TestReplicaWithholdsServersTextFromTheStart(t *testing.T) {
	url := pgtest.URL(t)
	u := newUpstreams(1, 1, 2)
	srv := u.copies["up0"][0]
	srv.AddResource(&mcpsdk.Resource{URI: "doc://up0/broken", Name: "broken page about topic1"}, func(context.Context, *mcpsdk.ReadResourceRequest) (*mcpsdk.ReadResourceResult, error) {
		return nil, &jsonrpc.Error{Code: -32603, Message: "cannot replay x://a/planted-word"}
	})
	r := startReplica(t, url, u, 0)
	waitUntil(t, 10*time.Second, "the replica holds the server's descriptors", func() bool { return descCount(t, r.eng) == 3 })
	res, err := r.eng.Assemble(t.Context(), engine.AssembleRequest{Query: "broken", TokenBudget: 1000, Pinned: []resource.Key{{Server: "up0", URI: "doc://up0/broken"}}})
	if err != nil {
		t.Fatal(err)
	}
	var detail string
	for _, o := range res.Omitted {
		if o.URI == "doc://up0/broken" {
			detail = o.Detail
		}
	}
	if detail == "" || strings.Contains(detail, "planted") || !strings.Contains(detail, "the server answered error -32603") {
		t.Errorf("read of a listed resource failing: %q; want what failed, not what the server said", detail)
	}
	for _, st := range r.eng.Servers() {
		if st.ServerName != "(withheld)" {
			t.Errorf("server info %q; want it withheld", st.ServerName)
		}
	}
}
