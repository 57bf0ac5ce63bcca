package engine_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/replica"
	"github.com/contextd/contextd/internal/store/pgstore/pgtest"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// BenchmarkScaleOut simulates a shared deployment: U fake upstream servers
// (go-sdk servers over in-memory transports) × R resources each
// ($CONTEXTD_BENCH_UPSTREAMS, default 100; $CONTEXTD_BENCH_RESOURCES,
// default 1,000), mirrored by 1 or 3 replicas through PostgreSQL, then
// churn: 10 rounds, each changing 10 resources (5 added, 5 rewritten) on
// each of 10 random upstreams, waiting for every replica to see each
// round. It reports, per upstream, the resources/list, resources/read and
// sessions the upstreams were opened, and the texts embedded across
// all replicas per resource (descriptors and first passages), so 1 and 3
// replicas compare directly. The embedder is indextest.BagEmbedder (fast).
func BenchmarkScaleOut(b *testing.B) {
	nup := envInt("CONTEXTD_BENCH_UPSTREAMS", 100)
	nres := envInt("CONTEXTD_BENCH_RESOURCES", 1000)
	for _, nrep := range []int{1, 3} {
		b.Run(fmt.Sprintf("upstreams=%d/resources=%d/replicas=%d", nup, nres, nrep), func(b *testing.B) {
			for b.Loop() {
				scaleOnce(b, nup, nres, nrep)
			}
		})
	}
}

func scaleOnce(b *testing.B, nup, nres, nrep int) {
	url := pgtest.URL(b)
	u := newUpstreams(nup, nrep, nres)
	reps := make([]*testReplica, nrep)
	for i := range reps {
		// Leases of 5 s renewed every second: on this shared machine a
		// 1 s lease can lapse under load, and a takeover would add calls
		// that have nothing to do with the number of replicas.
		reps[i] = startReplica(b, url, u, i, func(o *replica.Options) { o.LeaseTTL, o.RenewEvery = 5*time.Second, time.Second })
	}
	total := nup * nres
	// Texts: the content pass indexes every text (they are far under its
	// per-server byte bound).
	texts := nup * nres
	// Checked every half second, cheapest first: counting texts scans
	// every descriptor once per server.
	converged := func() bool {
		if len(owners(reps)) != nup {
			return false
		}
		for _, r := range reps {
			if st, _ := r.eng.Replica(); st.Pending != 0 || descCount(b, r.eng) != total {
				return false
			}
		}
		for _, r := range reps {
			if textCount(r.eng) != texts {
				return false
			}
		}
		return true
	}
	took := waitEvery(b, 30*time.Minute, 500*time.Millisecond, "every replica holds every resource and text", converged)
	b.Logf("replicas=%d: initial mirror of %d resources on every replica in %v", nrep, total, took.Round(time.Millisecond))
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 10 {
		for range 10 {
			s := u.names[rng.IntN(nup)]
			for j := range 5 {
				u.add(s, fmt.Sprintf("doc://%s/churn-%d-%d", s, round, j), fmt.Sprintf("added in round %d", round))
				u.add(s, fmt.Sprintf("doc://%s/%d", s, rng.IntN(nres)), fmt.Sprintf("rewritten in round %d, item %d", round, j))
			}
		}
		total, texts = 0, 0
		for _, s := range u.names {
			total += len(u.docs[s])
			texts += len(u.docs[s])
		}
		waitEvery(b, 10*time.Minute, 100*time.Millisecond, fmt.Sprintf("churn round %d reaches every replica", round), converged)
	}
	b.StopTimer()
	var lists, reads int
	for _, s := range u.names {
		for _, r := range u.recs[s] {
			lists += r.Count("resources/list")
			reads += r.Count("resources/read")
		}
	}
	inits := u.sessions.Load()
	var embeds int64
	for _, r := range reps {
		embeds += r.emb.Calls.Load()
	}
	b.ReportMetric(float64(lists)/float64(nup), "lists/upstream")
	b.ReportMetric(float64(reads)/float64(total), "reads/resource")
	b.ReportMetric(float64(inits)/float64(nup), "sessions/upstream")
	b.ReportMetric(float64(embeds)/float64(total), "embeds/resource")
	for _, r := range reps {
		r.stop()
	}
	b.StartTimer()
}
