package budget

import (
	"math"
	"testing"
	"time"
)

// Evidence comes from other replicas through the shared store, which any
// of them (or whoever can write to the database) may fill: an infinite or
// NaN side must neither hang SetShared (halving infinity never ends) nor
// turn estimates into NaN or negative token counts.
func TestSharedEvidenceThatIsNotFiniteIsIgnored(t *testing.T) {
	for _, ev := range []Evidence{
		{Server: "s", Class: Prose, Bytes: math.Inf(1), Tokens: 1},
		{Server: "s", Class: Prose, Bytes: 1000, Tokens: math.Inf(1)},
		{Server: "s", Class: Prose, Bytes: math.NaN(), Tokens: 100},
		{Server: "s", Class: Prose, Bytes: 1000, Tokens: math.NaN()},
	} {
		e := NewEstimator()
		done := make(chan struct{})
		go func() { e.SetShared([]Evidence{ev}); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("SetShared(%+v) did not return", ev) // the goroutine spins on
		}
		if got, ok := e.Estimate("s", "text/plain", 4000); !ok || got <= 0 || got > 4000 {
			t.Errorf("after %+v: 4,000 bytes estimated at %d tokens", ev, got)
		}
		if r := e.BytesPerToken("s", "text/plain"); math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 {
			t.Errorf("after %+v: %v bytes per token", ev, r)
		}
	}
}
