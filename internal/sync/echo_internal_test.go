package sync

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/contextd/contextd/internal/mcp"
)

// Two holds in a row as long leave two stillnesses of contextd's list as
// long: a pause after them fits both, at lags a hold apart. echo takes
// the lag the server's growth before does not belie, or the row's.
func TestAnEchoFittingTwoHoldsTakesTheLagItsGrowthBears(t *testing.T) {
	for _, tc := range []struct {
		name    string
		b       int           // when the list that grew again began, s
		grewTo  int           // the server grew every 4 s up to then, s
		rowLag  time.Duration // the row's lag, if told
		wantLag time.Duration
	}{
		// A bridge 90 s late: it grew on through the first stillness
		// (so not 27 s late) and paused as long as the first, 90 s after.
		{"90 s late, not 27 s", 152, 90, 0, 90 * time.Second},
		// Growing again 3 s after the second stillness: it grew through
		// the first one 3 s late, so it is 66 s late.
		{"66 s late, not 3 s", 128, 66, 0, 66 * time.Second},
		// A row's lag, once told, decides.
		{"the row's lag", 152, 90, 27 * time.Second, 27 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				at := func(sec int) time.Time { return start.Add(time.Duration(sec) * time.Second) }
				sleepTo := func(sec int) { time.Sleep(time.Until(at(sec))) }
				lists := &mcp.ServedLists{}
				w := &growthWatch{window: growthRegrow, pace: 4 * time.Second, lag: tc.rowLag}
				for sec := 0; sec <= tc.grewTo; sec += 4 {
					w.growth = append(w.growth, growthAt{at(sec), 1})
				}
				// contextd's list: still from 0 to 62 s, then from 63 to
				// 125 s, each while a 60 s hold ran.
				for _, g := range []struct{ sec, added int }{{0, 1}, {62, 60}, {63, 1}, {125, 80}} {
					sleepTo(g.sec)
					lists.NoteAdded(g.added)
				}
				w.held = [2]heldSpan{{at(1), at(61)}, {at(64), at(124)}}
				sleepTo(tc.b)
				lag, _, pause, ok := w.echo(lists, at(tc.grewTo), at(tc.b), 60)
				if !ok || !pause {
					t.Fatalf("echo: ok %v, pause %v; want a pause echo", ok, pause)
				}
				if lag != tc.wantLag {
					t.Errorf("lag %v, want %v", lag, tc.wantLag)
				}
			})
		})
	}
}
