package mcpserver

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/mcp"
	"github.com/contextd/contextd/internal/resource"
)

// A state file that cannot be used is refused with a reason, and one with
// values out of range is brought in range: either way the servers start.
func TestSavedPacesAreCheckedWhenRead(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := loadState(filepath.Join(dir, "none.json"), 8, 1<<10); got != nil || err != nil {
		t.Errorf("no file: %v, %v; want nothing and no error", got, err)
	}
	for _, bad := range []string{`{"version":2,"servers":{"a":`, `{"version":1,"servers":{}}`, `[]`, "\x00\x01"} {
		if _, err := loadState(write(bad), 8, 1<<10); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	got, err := loadState(write(`{"version":2,"servers":{"a":{"most":-5,"tokens":1e300,"at":0},"b":null,"c":{"most":3,"tokens":-1,"at":0},"d":{"most":1000000000,"size":-4}}}`), 8, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if a := got["a"]; a == nil || a.Most != 0 || a.Tokens != 8 {
		t.Errorf("a: %+v; want most 0, tokens at the burst", a)
	}
	if _, ok := got["b"]; ok {
		t.Error("a null server kept")
	}
	if c := got["c"]; c == nil || c.Tokens != 0 || c.Most != 3 {
		t.Errorf("c: %+v; want tokens 0", c)
	}
	if d := got["d"]; d == nil || d.Most != mcp.DefaultMaxResources || d.Size != 0 {
		t.Errorf("d: %+v; want most at the per-server cap, size 0", d)
	}
	// Version 3 says what was listed: only that is; version 2 said what
	// was off: all else is.
	a, b := offKey("s://a"), offKey("s://b")
	got, err = loadState(write(`{"version":3,"servers":{"s":{"listed":["`+a+`"],"off":{"`+b+`":1}}}}`), 8, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if s := got["s"]; s == nil || !s.wasListed("s://a") || s.wasListed("s://b") || s.wasListed("s://new") {
		t.Errorf("version 3: %+v; want s://a listed, s://b and s://new not", s)
	}
	got, err = loadState(write(`{"version":2,"servers":{"s":{"off":{"`+b+`":1}}}}`), 8, 1<<10)
	if err != nil {
		t.Fatal(err)
	}
	if s := got["s"]; s == nil || !s.wasListed("s://a") || s.wasListed("s://b") || !s.wasListed("s://new") {
		t.Errorf("version 2: %+v; want all but s://b listed", s)
	}
	big := write(`{"version":2,"servers":{"a":{"off":{"` + strings.Repeat("x", 1<<10) + `":1}}}}`)
	if _, err := loadState(big, 8, 1<<10); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("an oversized file: %v; want refused for its size", err)
	}
	// More entries than a server may list: no file written here (one of
	// 530 MB, under the bound for a hundred servers, took 3.2 GB to
	// decode for one).
	keys := make([]string, mcp.DefaultMaxResources+1)
	for i := range keys {
		keys[i] = fmt.Sprintf(`"%016x"`, i)
	}
	many := write(`{"version":3,"servers":{"s":{"listed":[` + strings.Join(keys, ",") + `]}}}`)
	if _, err := loadState(many, 8, 64<<20); err == nil || !strings.Contains(err.Error(), "more than a server may list") {
		t.Errorf("%d entries listed of one server: %v; want refused", len(keys), err)
	}
	if got := stateBytesFor(1); got != 2*stateBytesPerServer {
		t.Errorf("the bound for one server: %d bytes; want %d", got, 2*stateBytesPerServer)
	}
	if got := stateBytesFor(10_000); got != maxStateBytes {
		t.Errorf("the bound for 10,000 servers: %d bytes; want %d", got, maxStateBytes)
	}
}

// A restored pace keeps what waited, since its time, and counts it as
// growth; its allowance grows by the time contextd was down, up to the
// burst. Settled, it opens no window; a first list that had not settled
// settles when it would have, with what it had let through.
func TestARestoredPaceKeepsWhatWaited(t *testing.T) {
	now := time.Now()
	saved := &savedPace{Most: 2, Tokens: 1, At: now.Add(-30 * time.Second).UnixMilli(), Off: map[string]int64{
		offKey("s://c"): now.Add(-time.Hour).UnixMilli(), offKey("s://gone"): 1, offKey("s://future"): now.Add(time.Hour).UnixMilli()}}
	var all []resource.Descriptor
	for _, u := range []string{"s://a", "s://b", "s://c", "s://d", "s://future"} {
		all = append(all, resource.Descriptor{Server: "s", URI: u})
	}
	p := saved.restore(now, 8, all)
	if len(p.since) != 2 || p.since[resource.Key{Server: "s", URI: "s://c"}].IsZero() || !p.since[resource.Key{Server: "s", URI: "s://gone"}].IsZero() {
		t.Errorf("waiting %v; want s://c and s://future", p.since)
	}
	if at := p.since[resource.Key{Server: "s", URI: "s://future"}]; at.After(now) {
		t.Errorf("a time to come kept: %v", at)
	}
	if p.most != 3 {
		t.Errorf("most %d; want the 3 not kept off", p.most)
	}
	// Saved with what was listed: the rest is growth, what waited with its
	// time, what is new since now.
	listed := *saved
	listed.listed = map[string]bool{offKey("s://a"): true, offKey("s://b"): true}
	p = listed.restore(now, 8, all)
	if len(p.since) != 3 || !p.since[resource.Key{Server: "s", URI: "s://c"}].Equal(time.UnixMilli(now.Add(-time.Hour).UnixMilli())) || !p.since[resource.Key{Server: "s", URI: "s://d"}].Equal(time.UnixMilli(now.UnixMilli())) {
		t.Errorf("with what was listed, waiting %v; want s://c since an hour, s://d since now, s://future", p.since)
	}
	if p.most != 2 {
		t.Errorf("with what was listed, most %d; want the 2 saved", p.most)
	}
	if p.tokens < 2.9 || p.tokens > 3.1 {
		t.Errorf("tokens %.2f; want 3 for the 30 s down (the 1 saved is spent by what was kept off)", p.tokens)
	}
	// A server withheld when written has no allowance of its own, nor
	// room.
	w := *saved
	w.Withheld, w.Off, w.listed = true, nil, map[string]bool{offKey("s://a"): true}
	if p := w.restore(now, 8, all); p.tokens > 3.1 || p.most != 1 || p.withheldUntil.Before(now.Add(restoredWithheldFor-time.Second)) {
		t.Errorf("withheld: tokens %.2f, most %d, withheld until %v; want 3, 1 and an hour on", p.tokens, p.most, p.withheldUntil)
	}
	if !p.settled(now) {
		t.Errorf("a settled pace restored with a window until %v", p.settleUntil)
	}
	saved.SettleUntil, saved.Size = now.Add(-time.Minute).UnixMilli(), 40
	if p := saved.restore(now, 8, all); p.settled(now.Add(-time.Millisecond)) || !p.settled(now) || p.size != 40 {
		t.Errorf("an unsettled first list whose time passed: until %v, size %d; want settling now with its size 40", p.settleUntil, p.size)
	}
}

// An entry is kept under a key of fixed size, whatever its URI.
func TestOffKeysHaveAFixedSize(t *testing.T) {
	long := "file:///" + strings.Repeat("&", 4000)
	if a, b := offKey(long), offKey("x://a"); len(a) != 16 || len(b) != 16 || a == b {
		t.Errorf("keys %q, %q; want 16 hexadecimal digits each, distinct", a, b)
	}
}

// After a restart the room up to the most a server had listed is not for
// what was kept off when the state was written: with room left, another
// filter (the copy checks, a hold) kept those off, and what it had found
// is gone with the restart. In a loop of two daemons each restart let
// what the copy checks held back fill the room (the list ×1.6–1.8).
func TestARestoredPaceGivesNoRoomToWhatWasKeptOff(t *testing.T) {
	now := time.Now()
	var all []resource.Descriptor
	listed, off := map[string]bool{}, map[string]int64{}
	for i := range 20 {
		u := fmt.Sprintf("s://%d", i)
		all = append(all, resource.Descriptor{Server: "s", URI: u})
		if i < 5 {
			listed[offKey(u)] = true
		} else {
			off[offKey(u)] = now.UnixMilli()
		}
	}
	p := (&savedPace{Most: 18, At: now.UnixMilli(), listed: listed, Off: off}).restore(now, 8, all)
	if p.most != 5 || len(p.since) != 15 {
		t.Errorf("most %d, %d waiting; want the 5 listed, 15 waiting", p.most, len(p.since))
	}
	// Room the pace left is kept: a server that shrank keeps its most.
	p = (&savedPace{Most: 18, At: now.UnixMilli(), listed: listed}).restore(now, 8, all[:5])
	if p.most != 18 {
		t.Errorf("a server that shrank from 18 to 5: most %d; want 18", p.most)
	}
	// A version 3 file that did not say what was listed reads as version 2.
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte(`{"version":3,"servers":{"s":{"listed":null,"off":{"`+offKey("s://9")+`":1}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := loadState(path, 8, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if s := got["s"]; s == nil || s.listed != nil || !s.wasListed("s://1") || s.wasListed("s://9") {
		t.Errorf("listed null: %+v; want everything but Off listed", s)
	}
}

// What a state file says was listed is kept through a withholding before
// the first list; one that does not say (version 2, or "listed" dropped)
// vouches for nothing: every entry not off counted, copies too.
func TestAStateThatDoesNotSayWhatWasListedKeepsNothing(t *testing.T) {
	dir := t.TempDir()
	all := []resource.Descriptor{{Server: "s", URI: "s://a"}, {Server: "s", URI: "s://copy"}}
	for _, c := range []struct {
		file string
		want int
	}{
		{`{"version":3,"servers":{"s":{"listed":["` + offKey("s://a") + `"]}}}`, 1},
		{`{"version":3,"servers":{"s":{"off":{"` + offKey("s://b") + `":1}}}}`, 0},
		{`{"version":2,"servers":{"s":{"off":{"` + offKey("s://b") + `":1}}}}`, 0},
	} {
		p := filepath.Join(dir, "state.json")
		if err := os.WriteFile(p, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		prior, err := loadState(p, 8, 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{prior: prior}
		kept := map[resource.Key]bool{}
		s.keepPriorListed(kept, "s", all)
		if len(kept) != c.want || c.want == 1 && !kept[all[0].Key()] {
			t.Errorf("%s: kept %d; want %d", c.file, len(kept), c.want)
		}
	}
}
