package mcp_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/contextd/contextd/internal/mcp"
)

// Stillness tells the list's growth before a time and the first at or
// after it; GrewSince whether any came at or after it.
func TestListGrowthsTellStillnessAndGrowthSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lists mcp.ServedLists
		t0 := time.Now()
		if lists.GrewSince(t0) {
			t.Error("grew since the start with nothing recorded")
		}
		if _, _, ok := lists.Stillness(t0); ok {
			t.Error("a stillness known with nothing recorded")
		}
		lists.NoteAdded(3)
		time.Sleep(10 * time.Second)
		lists.NoteAdded(0) // not a growth
		time.Sleep(20 * time.Second)
		mid := time.Now()
		if lists.GrewSince(t0.Add(time.Second)) {
			t.Error("grew since 1 s in; the only growth was at 0 s")
		}
		if _, _, ok := lists.Stillness(mid); ok {
			t.Error("a stillness known before the list grew again")
		}
		time.Sleep(5 * time.Second)
		lists.NoteAdded(7)
		if !lists.GrewSince(mid) {
			t.Error("not grown since 30 s in; it grew at 35 s")
		}
		last, next, ok := lists.Stillness(mid)
		if !ok || !last.At.Equal(t0) || last.Added != 3 || next.At.Sub(t0) != 35*time.Second || next.Added != 7 {
			t.Errorf("stillness around 30 s: %v %+v %+v; want from 0 s (3) to 35 s (7)", ok, last, next)
		}
	})
}
