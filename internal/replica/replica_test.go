package replica_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/replica"
	"github.com/contextd/contextd/internal/store/pgstore"
	"github.com/contextd/contextd/internal/store/pgstore/pgtest"
)

// Token ratios one replica learns reach the others' estimates, and are not
// echoed back as their own.
func TestTokenRatiosAreShared(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url := pgtest.URL(t)
	st, err := pgstore.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	emb := &indextest.BagEmbedder{}
	start := func(holder string) *budget.Estimator {
		est := budget.NewEstimator()
		ix, err := index.Open(ctx, index.Options{Embedder: emb})
		if err != nil {
			t.Fatal(err)
		}
		r := replica.New(replica.Options{Store: st, Embedder: "bag/64", Holder: holder, Estimator: est,
			ShareEvery: 50 * time.Millisecond, LeaseTTL: time.Second, PollEvery: 100 * time.Millisecond})
		r.Attach(ix)
		if _, err := r.Load(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = r.Run(ctx) })
		t.Cleanup(func() { cancel(); wg.Wait() })
		return est
	}
	a, b := start("a"), start("b")
	prior := b.BytesPerToken("s", "text/markdown")
	a.Observe("s", "text/markdown", 400_000, 200_000) // 2 bytes per token
	want := a.BytesPerToken("s", "text/markdown")
	deadline := time.Now().Add(5 * time.Second)
	for math.Abs(b.BytesPerToken("s", "text/markdown")-want) > 0.01 {
		if time.Now().After(deadline) {
			t.Fatalf("replica b's ratio %v (prior %v); want a's %v", b.BytesPerToken("s", "text/markdown"), prior, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if l := b.Learned(); len(l) != 0 {
		t.Errorf("b reports what it was given as learned: %+v", l)
	}
	time.Sleep(200 * time.Millisecond) // rounds in which b stores its own
	if got := a.BytesPerToken("s", "text/markdown"); math.Abs(got-want) > 1e-9 {
		t.Errorf("a's ratio moved to %v from %v: its evidence came back doubled", got, want)
	}
}
