package mcp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// What a ServedLists answered survives MarshalBinary and Restore: copies,
// near copies and short copies of it are told as before, and a server's
// check runs on; a read answered after the restart is kept beside the
// restored ones.
func TestServedListsRestoreTellsCopiesAsBefore(t *testing.T) {
	page := "# Runbook 7\n\nThis page explains postgres vacuum tuning in depth, part 7.\nIt covers the configuration knobs, the monitoring queries\nand the operational runbook steps that an engineer follows.\n"
	text := func(s string) []resource.Content { return []resource.Content{{Text: s}} }
	a := resource.Key{Server: "a", URI: "doc://a/7"}
	short := resource.Key{Server: "a", URI: "doc://a/short"}
	var old ServedLists
	old.NoteRead(a, text(page))
	old.NoteRead(short, text("vacuum at two, reindex at three"))
	old.Check("b", time.Now().Add(time.Hour))
	old.Check("c", time.Now().Add(1000*time.Hour)) // past maxMarkAhead
	old.Freeze("d", time.Now().Add(time.Hour))     // not kept: see servedstate.go
	data, err := old.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}

	var s ServedLists
	later := resource.Key{Server: "a", URI: "doc://a/8"}
	laterPage := strings.ReplaceAll(page, "7", "8") + "It adds a section on freezing.\n"
	s.NoteRead(later, text(laterPage))
	if _, err := s.Restore(data); err != nil {
		t.Fatal(err)
	}
	b := resource.Key{Server: "b", URI: "doc://b/c/7"}
	for _, c := range []struct {
		name  string
		got   []resource.Content
		of    resource.Key
		near  bool
		short bool
	}{
		{"as it was", text(page), a, false, false},
		{"a header line added", text("passed back\n" + page), a, false, false},
		{"every line quoted", text("> " + strings.ReplaceAll(page, "\n", "\n> ")), a, true, false},
		{"short", text("vacuum at two, reindex at three"), short, false, true},
		{"read after the restart", text(laterPage), later, false, false},
	} {
		got := s.ServedBack(b, c.got)
		if len(got.Of) == 0 || got.Of[0] != c.of || got.Near != c.near || got.Short != c.short {
			t.Errorf("%s: ServedBack = %+v; want a copy of %v (near %v, short %v)", c.name, got, c.of, c.near, c.short)
		}
	}
	if got := s.ServedBack(b, text("b's own page on kafka consumer rebalancing, partition lag and the runbook\n")); len(got.Of) > 0 {
		t.Errorf("an unrelated page: ServedBack = %+v; want no copy", got)
	}
	if !s.Checked("b") {
		t.Error("b's check did not survive the restore")
	}
	if s.checked["c"].After(time.Now().Add(maxMarkAhead)) {
		t.Errorf("c checked until %v: want at most %v from now", s.checked["c"], maxMarkAhead)
	}
	if s.Held("d") {
		t.Error("d's freeze survived the restore: a restarted process listing nothing yet would list none of it")
	}
}

// Restore keeps the latest reads of the restored and new ones (a text
// read again once), and stops at an entry cut short or damaged, keeping
// those before; it refuses what is no encoding of its own, leaving the
// ServedLists as it was.
func TestServedListsRestoreIsBoundedAndChecked(t *testing.T) {
	read := func(s *ServedLists, run string, i int) {
		s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/%s/%d", run, i)}, []resource.Content{{Text: fmt.Sprintf("page %d of the %s run, long enough to be told by its digest alone, %d", i, run, i)}})
	}
	var old ServedLists
	for i := range maxServedReads {
		read(&old, "old", i)
	}
	data, err := old.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	whole := len(data)
	// Polled: one read, moved last, however many times the journal
	// holds it (more than Restore keeps before it compacts; a poll is
	// journaled once a minute).
	var polled servedRead
	for _, r := range old.reads {
		if r.key.URI == "doc://a/old/7" {
			polled = r
		}
	}
	polled.first, polled.at = time.Now().Add(-time.Hour), time.Now().Add(-time.Minute)
	for range 5 * maxServedReads {
		polled.at = polled.at.Add(time.Millisecond)
		data = appendEntry(data, entryRead, readPayload(nil, &polled))
	}
	read(&old, "old", maxServedReads)
	more, ok := old.Journal()
	if !ok || len(more) == 0 {
		t.Fatalf("Journal = %d bytes, %v; want the read since MarshalBinary", len(more), ok)
	}
	data = append(data, more...)

	var s ServedLists
	for i := range 10 {
		read(&s, "new", i)
	}
	dropped, err := s.Restore(data)
	if err != nil || dropped != 0 {
		t.Fatalf("Restore = %d dropped, %v", dropped, err)
	}
	if len(s.reads) != maxServedReads+11 {
		t.Fatalf("%d reads after the restore; want %d (the old run's, one read polled once, and the new run's)", len(s.reads), maxServedReads+11)
	}
	if got := s.reads[len(s.reads)-1].key.URI; got != "doc://a/new/9" {
		t.Errorf("the latest read is %s; want the new run's last", got)
	}
	if got := s.reads[maxServedReads-1]; got.key.URI != "doc://a/old/7" || !got.first.Before(got.at) && !got.first.Equal(got.at) {
		t.Errorf("the polled read is %s, first %v, last %v; want doc://a/old/7 just before the old run's last", got.key.URI, got.first, got.at)
	}

	// Cut short anywhere, or damaged: what comes before is kept.
	for _, cut := range []int{len(data) - 1, len(data) - 700, len(servedMagic) + 3} {
		var c ServedLists
		if _, err := c.Restore(data[:cut]); err != nil {
			t.Fatalf("cut at %d: %v", cut, err)
		}
		if len(c.reads) == 0 && cut > 1000 || len(c.reads) > maxServedReads+1 {
			t.Errorf("cut at %d: %d reads kept", cut, len(c.reads))
		}
	}
	bad := slices.Clone(data)
	bad[whole/2] ^= 0xff
	var d ServedLists
	if dropped, err := d.Restore(bad); err != nil || dropped != 1 || len(d.reads) == 0 || len(d.reads) >= maxServedReads {
		t.Errorf("a byte flipped in the middle: %d reads kept, %d dropped, %v; want those before it", len(d.reads), dropped, err)
	}

	// Entries that cannot be right are dropped alone; a read dated after
	// now (the clock set back since it was written) is kept, as of now.
	now := time.Now()
	good := servedRead{key: resource.Key{Server: "a", URI: "doc://a/fine"}, first: now, at: now}
	future := good
	future.key.URI, future.at = "doc://a/future", now.Add(time.Hour)
	unsorted := good
	unsorted.key.URI = "doc://a/unsorted"
	unsorted.sketch = make([]uint64, nearSketch)
	unsorted.sketch[0] = 9
	long := good
	long.key.URI = "doc://a/long"
	long.sketch = make([]uint64, nearSketch+1)
	enc := []byte(servedMagic)
	for _, r := range []servedRead{future, unsorted, long, good} {
		enc = appendEntry(enc, entryRead, readPayload(nil, &r))
	}
	var fresh ServedLists
	if dropped, err := fresh.Restore(enc); err != nil || dropped != 2 {
		t.Fatalf("Restore = %d dropped, %v; want 2", dropped, err)
	}
	if len(fresh.reads) != 2 || fresh.reads[0].key.URI != "doc://a/future" || fresh.reads[1].key.URI != "doc://a/fine" {
		t.Fatalf("restored %v; want doc://a/future and doc://a/fine", fresh.reads)
	}
	if at := fresh.reads[0].at; at.After(time.Now()) || at.Before(now.Add(-time.Second)) {
		t.Errorf("the read dated an hour ahead is restored at %v; want now (%v)", at, now)
	}
	for name, bad := range map[string][]byte{"garbage": []byte("not a record"), "empty": nil, "another version": []byte("contextd-served\x06")} {
		before := len(fresh.reads)
		if _, err := fresh.Restore(bad); err == nil {
			t.Errorf("%s: Restore succeeded", name)
		}
		if len(fresh.reads) != before {
			t.Errorf("%s: a failed Restore changed the ServedLists", name)
		}
	}
}

// However it was made, a file within maxServedBytes restores within a
// bounded memory: each entry is checked against what is left before it is
// kept (a gob of empty shingles took 1.9 GB for 63 MB).
func TestServedListsRestoreOfAStuffedFileIsBounded(t *testing.T) {
	enc := []byte(servedMagic)
	// A read claiming a huge sketch, then a million checks.
	p := appendString(nil, "a")
	p = appendString(p, "doc://a/x")
	p = append(p, make([]byte, 33)...)
	p = binary.AppendVarint(p, 0)
	p = binary.AppendVarint(p, 0)
	p = append(p, 255)
	enc = appendEntry(enc, entryRead, p)
	for i := range 1_000_000 {
		enc = appendEntry(enc, entryCheck, checkPayload(nil, fmt.Sprint(i), time.Now().Add(time.Hour)))
	}
	var s ServedLists
	dropped, err := s.Restore(enc)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.reads) != 0 || len(s.checked) != maxRestoredChecks || dropped != 1+1_000_000-maxRestoredChecks {
		t.Errorf("%d reads, %d checks restored, %d dropped; want none, %d, the rest", len(s.reads), len(s.checked), dropped, maxRestoredChecks)
	}
	huge := append([]byte(servedMagic), entryRead)
	huge = binary.AppendUvarint(huge, 1<<40)
	if dropped, err := s.Restore(huge); err != nil || dropped != 1 {
		t.Errorf("an entry claiming 1 TiB: %d dropped, %v", dropped, err)
	}
}

// BenchmarkServedListsMarshalBinary writes a full ServedLists: 4,096
// reads of pages with sketches, what Run writes at most once a minute.
func BenchmarkServedListsMarshalBinary(b *testing.B) {
	var s ServedLists
	for i := range maxServedReads {
		page := fmt.Sprintf("# Runbook %d\n\n", i) + strings.Repeat(fmt.Sprintf("Step %d of runbook %d: check the replica lag, then the vacuum queue and the disk.\n", i%97, i), 12)
		s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/runbooks/%d", i)}, []resource.Content{{Text: page}})
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		data, err := s.MarshalBinary()
		if err != nil {
			b.Fatal(err)
		}
		n = len(data)
	}
	b.ReportMetric(float64(n), "bytes/file")
}

// What is written holds no word's hash (a word list reverses those: 29
// of 36 words of a confidential page came back, in order), and nothing
// of a read its server marked for the requesting user only, which is
// still told within the run.
func TestServedListsWriteNoWordsAndNoPrivateReads(t *testing.T) {
	page := "# Runbook 7\n\nPatient Alice Morgan was seen for a diagnosis of chronic migraine.\nThe confidential plan raises the dose and reviews it in March.\nEvery engineer on call follows the operational runbook steps.\n"
	private := "# Salaries\n\nThe compensation table lists every engineer's salary, bonus and equity grant.\nIt is for the requesting user only and must not outlive the process.\n"
	text := func(s string) []resource.Content { return []resource.Content{{Text: s}} }
	var s ServedLists
	if _, err := s.MarshalBinary(); err != nil { // journaling from here
		t.Fatal(err)
	}
	s.NoteRead(resource.Key{Server: "a", URI: "doc://a/7"}, text(page))
	s.NotePrivateRead(resource.Key{Server: "a", URI: "doc://a/salaries"}, text(private))
	journal, ok := s.Journal()
	if !ok {
		t.Fatal("Journal not ok")
	}
	whole, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"journal": journal, "whole": whole} {
		var ws []word
		ws, _ = appendWords(ws, strings.ReplaceAll(page, "\n", " "))
		for _, w := range ws {
			if bytes.Contains(data, binary.BigEndian.AppendUint64(nil, uint64(w))) {
				t.Errorf("%s: holds a word's hash", name)
				break
			}
		}
		if bytes.Contains(data, []byte("salaries")) {
			t.Errorf("%s: holds the private read", name)
		}
		if !bytes.Contains(data, []byte("doc://a/7")) {
			t.Errorf("%s: lacks the public read", name)
		}
	}
	if c := s.ServedBack(resource.Key{Server: "b", URI: "doc://b/x"}, text(private)); len(c.Of) == 0 {
		t.Error("a copy of the private read is not told within the run")
	}
	// A near copy of what was restored is told as before: the masked
	// hashes do what the words did.
	var r ServedLists
	if _, err := r.Restore(whole); err != nil {
		t.Fatal(err)
	}
	if c := r.ServedBack(resource.Key{Server: "b", URI: "doc://b/y"}, text("> "+strings.ReplaceAll(page, "\n", "\n> "))); len(c.Of) == 0 || !c.Near {
		t.Errorf("a quoted copy after the restore: %+v; want a near copy", c)
	}
}

// One text read under many resources (a template's URIs, pins) is
// remembered under the latest maxPerText of them, and pushes no other
// read out of the bound: 4,900 such reads forgot every other page.
func TestATextReadUnderManyURIsPushesNothingOut(t *testing.T) {
	text := func(s string) []resource.Content { return []resource.Content{{Text: s}} }
	page := func(i int) string {
		return fmt.Sprintf("Page %d on postgres vacuum tuning: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows %d.\n", i, i)
	}
	var s ServedLists
	for i := range 300 {
		s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/%d", i)}, text(page(i)))
	}
	status := "status: green, every replica in sync, no lag on any partition today"
	for i := range 5 * maxServedReads {
		s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/status/%d", i)}, text(status))
	}
	told := 0
	for i := range 300 {
		if c := s.ServedBack(resource.Key{Server: "b", URI: fmt.Sprintf("doc://b/%d", i)}, text(page(i))); len(c.Of) > 0 {
			told++
		}
	}
	if told != 300 || len(s.reads) != 300+maxPerText {
		t.Errorf("after one text read under %d URIs: %d of 300 copies told, %d reads remembered; want all, %d", 5*maxServedReads, told, len(s.reads), 300+maxPerText)
	}
	if c := s.ServedBack(resource.Key{Server: "b", URI: "doc://b/status"}, text(status)); len(c.Of) != maxPerText {
		t.Errorf("a copy of the text read under many URIs: %+v; want the latest %d", c.Of, maxPerText)
	}
}

// A text polled while nothing else is read is written once; polled among
// other reads, once maxRepeatLag reads were written after it, so that a
// restore keeps it among the latest.
func TestARepeatedReadIsWrittenAgainOnceOthersWere(t *testing.T) {
	var s ServedLists
	if _, err := s.MarshalBinary(); err != nil {
		t.Fatal(err)
	}
	k := resource.Key{Server: "a", URI: "doc://a/status"}
	text := []resource.Content{{Text: "status: green, every replica in sync, no lag on any partition today"}}
	s.NoteRead(k, text)
	once, _ := s.Journal()
	for range 1000 {
		s.NoteRead(k, text)
	}
	if polled, _ := s.Journal(); len(once) == 0 || len(polled) != 0 {
		t.Errorf("1,000 reads of one text journaled %d bytes, one read %d; want it written once", len(polled), len(once))
	}
	entries := func(j []byte) int {
		var r ServedLists
		if _, err := r.Restore(append([]byte(servedMagic), j...)); err != nil {
			t.Fatal(err)
		}
		return len(r.reads)
	}
	for i := range 2 * maxRepeatLag { // the status read again after each other read
		s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/%d", i)}, []resource.Content{{Text: fmt.Sprintf("page %d", i)}})
		s.NoteRead(k, text)
	}
	j, _ := s.Journal()
	if n := entries(j); n != 2*maxRepeatLag+1 {
		t.Errorf("%d other reads with the status read after each: %d entries restored; want those and the status", 2*maxRepeatLag, n)
	}
	// The status is written again each maxRepeatLag reads: twice.
	if entriesOfStatus := bytes.Count(j, []byte("doc://a/status")); entriesOfStatus != 2 {
		t.Errorf("the status polled among %d reads was written %d times; want 2", 2*maxRepeatLag, entriesOfStatus)
	}
	// Up to maxRepeatLag resources polled in turn are written once each.
	for range 3 {
		for i := range maxRepeatLag - 1 {
			s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/polled/%d", i)}, []resource.Content{{Text: fmt.Sprintf("polled %d", i)}})
		}
	}
	if j, _ := s.Journal(); entries(j) != maxRepeatLag-1 || bytes.Count(j, []byte("doc://a/polled/1000")) != 1 {
		t.Errorf("%d resources polled three times in turn: %d entries written; want each once", maxRepeatLag-1, entries(j))
	}
}

// A page re-read more often than once a minute is written again once a
// minute, so its place in the file follows its place in memory: written
// once a minute after its last read, not its last write, it stayed where
// it was first written, and a restart after 5,120 other texts forgot it
// (every copy of it then listed).
func TestAPageReReadOftenStaysLatestAfterARestore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		text := func(s string) []resource.Content { return []resource.Content{{Text: s}} }
		page := func(i int) string {
			return fmt.Sprintf("Page %d on postgres vacuum tuning: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows %d.\n", i, i)
		}
		var s ServedLists
		data, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		for round := range 12 { // 6 minutes: the pages each 30 s, 600 status pages between
			for i := range 30 {
				s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/%d", i)}, text(page(i)))
			}
			for j := range 600 {
				s.NoteRead(resource.Key{Server: "a", URI: "doc://a/status"}, text(fmt.Sprintf("status %d-%d: green, every replica in sync, no lag on any partition", round, j)))
			}
			more, ok := s.Journal()
			if !ok {
				t.Fatal("Journal not ok")
			}
			data = append(data, more...)
			time.Sleep(30 * time.Second)
		}
		var r ServedLists
		if _, err := r.Restore(data); err != nil {
			t.Fatal(err)
		}
		told := 0
		for i := range 30 {
			if c := r.ServedBack(resource.Key{Server: "b", URI: fmt.Sprintf("doc://b/%d", i)}, text(page(i))); len(c.Of) > 0 {
				told++
			}
		}
		if told != 30 {
			t.Errorf("30 pages re-read each 30 s among 7,200 other texts: %d told after a restore; want all", told)
		}
	})
}

// A page re-read every 30 s among 80 other texts a second stays on disk
// where its last read puts it, through the whole writes the appends bring
// (each 15 s once they grew past the last by 1 MiB): a restart at any time
// keeps it. A whole write took its reads as written then, not where their
// last read put them, and the re-reads within the minute after were not
// appended: 0 of 300 told after a restart 154 s in.
func TestPagesReReadAmongManyTextsSurviveWholeWrites(t *testing.T) {
	page := func(i int) string {
		return fmt.Sprintf("Page %d on postgres vacuum tuning: autovacuum settings,\nthe monitoring queries and the runbook steps an engineer follows %d.\n", i, i)
	}
	// Each 30 s among 80 texts a second; each 59 s among 60 (a rule of
	// once a minute wrote such a page every other read: 118 s behind,
	// past 5,120 others, 0 of 300 told 147 s in).
	for _, c := range []struct{ period, rate int }{{30, 80}, {59, 60}} {
		t.Run(fmt.Sprintf("each %d s among %d a second", c.period, c.rate), func(t *testing.T) {
			pagesReReadAmongManyTexts(t, page, c.period, c.rate)
		})
	}
}

func pagesReReadAmongManyTexts(t *testing.T, page func(int) string, period, rate int) {
	synctest.Test(t, func(t *testing.T) {
		s := &ServedLists{}
		var file []byte
		size, appended := 0, 0
		whole := func() {
			file, _ = s.MarshalBinary()
			size, appended = len(file), 0
		}
		appendJournal := func() {
			e, ok := s.Journal()
			if !ok {
				whole()
				return
			}
			file = append(file, e...)
			appended += len(e)
		}
		readPages := func() {
			for i := range 300 {
				s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/%d", i)}, []resource.Content{{Text: page(i)}})
				appendJournal()
			}
		}
		whole()
		readPages()
		status := 0
		for sec := 1; sec <= 400; sec++ {
			for range rate {
				time.Sleep(time.Second / time.Duration(rate))
				status++
				s.NoteRead(resource.Key{Server: "a", URI: "doc://a/status"}, []resource.Content{{Text: fmt.Sprintf(`{"requests":%d}`, status)}})
				appendJournal()
			}
			if sec%15 == 0 && appended > size+1<<20 {
				whole()
			}
			if sec%period == 0 {
				readPages()
			}
			if sec <= 120 || sec%21 != 0 {
				continue
			}
			var restarted ServedLists
			if _, err := restarted.Restore(file); err != nil {
				t.Fatal(err)
			}
			told := 0
			for i := range 300 {
				if c := restarted.ServedBack(resource.Key{Server: "b", URI: fmt.Sprintf("doc://b/%d", i)}, []resource.Content{{Text: page(i)}}); len(c.Of) > 0 {
					told++
				}
			}
			if told != 300 {
				t.Fatalf("a restart %d s in tells %d of the 300 pages re-read each %d s; want all", sec, told, period)
			}
		}
	})
}

// A record of an earlier format (versions 2 to 4: sketches whose hashes
// came with their words masked, of another length) is restored by its
// digests: exact copies of what it holds are told, near ones once read
// again.
func TestARecordOfAnEarlierFormatKeepsItsDigests(t *testing.T) {
	page := "# Runbook 7\n\nThis page explains postgres vacuum tuning in depth, part 7.\nIt covers the configuration knobs, the monitoring queries\nand the operational runbook steps that an engineer follows.\n"
	var s ServedLists
	s.NoteRead(resource.Key{Server: "a", URI: "doc://a/7"}, []resource.Content{{Text: page}})
	read := s.reads[0]
	p := readPayload(nil, &read)
	p = append(p[:len(p)-1-8*len(read.sketch)], byte(len(read.sketch)))
	for i, h := range read.sketch {
		// Each hash with its four words masked, their four tags, how many
		// words, and its line.
		p = binary.BigEndian.AppendUint64(p, h)
		p = append(p, make([]byte, 8*4+2*4)...)
		p = append(p, 4)
		p = binary.AppendUvarint(p, uint64(i+1))
	}
	for version := byte(2); version <= 4; version++ {
		old := appendEntry([]byte("contextd-served"+string(rune(version))), entryRead, p)
		var r ServedLists
		if dropped, err := r.Restore(old); err != nil || dropped != 0 || len(r.reads) != 1 || r.reads[0].digest != read.digest {
			t.Fatalf("Restore of a version %d record: %d reads, %d dropped, %v", version, len(r.reads), dropped, err)
		}
		if r.reads[0].sketch != nil {
			t.Errorf("a version %d record's sketch was kept", version)
		}
		if c := r.ServedBack(resource.Key{Server: "b", URI: "doc://b/x"}, []resource.Content{{Text: page}}); len(c.Of) != 1 || c.Of[0].URI != "doc://a/7" {
			t.Errorf("an exact copy after restoring a version %d record: %+v; want told", version, c)
		}
	}
}

// The copies known, passed back or not, outlive a restart, whether written
// whole or journaled since; one found no copy any more, or pruned, does not.
func TestCopiesKnownSurviveARestart(t *testing.T) {
	key := func(uri string) resource.Key { return resource.Key{Server: "b", URI: uri} }
	var s ServedLists
	s.NoteCopy(key("doc://b/whole"), true)
	s.NotePassedBack(key("doc://b/whole"))
	s.NoteCopy(key("doc://b/gone"), true)
	s.NoteCopy(key("doc://b/pruned"), true)
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	s.NoteCopy(key("doc://b/later"), true)
	s.NoteCopy(key("doc://b/back"), true)
	s.NotePassedBack(key("doc://b/back"))
	s.NoteCopy(key("doc://b/gone"), false)
	s.Prune("b", map[string]bool{"doc://b/whole": true, "doc://b/later": true, "doc://b/back": true})
	more, ok := s.Journal()
	if !ok {
		t.Fatal("Journal: not ok")
	}
	var restarted ServedLists
	if dropped, err := restarted.Restore(append(data, more...)); err != nil || dropped != 0 {
		t.Fatalf("Restore: %d dropped, %v", dropped, err)
	}
	for _, c := range []struct {
		uri          string
		copied, back bool
	}{{"doc://b/whole", true, true}, {"doc://b/later", true, false}, {"doc://b/back", true, true}, {"doc://b/gone", false, false}, {"doc://b/pruned", false, false}} {
		if got, back := restarted.IsCopy(key(c.uri)), restarted.IsPassedBack(key(c.uri)); got != c.copied || back != c.back {
			t.Errorf("%s after a restart: copy %v, passed back %v; want %v, %v", c.uri, got, back, c.copied, c.back)
		}
	}
}

// What the record keeps of a copy does not grow with its URI: a server
// listing one page a host read under thousands of 4 KB URIs made it
// 12 MB at 3,000 copies, rewritten whole while reads waited.
func TestCopiesInTheRecordAreSmallWhateverTheirURIs(t *testing.T) {
	var s ServedLists
	long := strings.Repeat("x", 4096)
	for i := range 3000 {
		k := resource.Key{Server: "b", URI: fmt.Sprintf("doc://b/%d/%s", i, long)}
		s.NoteCopy(k, true)
		if i%2 == 0 {
			s.NotePassedBack(k)
		}
	}
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 3000*32 {
		t.Errorf("record of 3,000 copies under 4 KB URIs: %d bytes; want at most 32 a copy", len(data))
	}
	var restarted ServedLists
	if _, err := restarted.Restore(data); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 2998, 2999} {
		k := resource.Key{Server: "b", URI: fmt.Sprintf("doc://b/%d/%s", i, long)}
		if !restarted.IsCopy(k) || restarted.IsPassedBack(k) != (i%2 == 0) {
			t.Errorf("copy %d after a restart: copy %v, passed back %v", i, restarted.IsCopy(k), restarted.IsPassedBack(k))
		}
	}
	if n := restarted.CopyCount("b"); n != 3000 {
		t.Errorf("%d copies restored; want 3000", n)
	}
}

// Copies restored of a server no longer configured are forgotten when the
// caller says so, and those of the others kept.
func TestCopiesOfServersGoneAreForgotten(t *testing.T) {
	var s ServedLists
	for _, server := range []string{"b", "gone"} {
		s.NoteCopy(resource.Key{Server: server, URI: "doc://" + server + "/c"}, true)
	}
	data, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var restarted ServedLists
	if _, err := restarted.Restore(data); err != nil {
		t.Fatal(err)
	}
	restarted.ForgetUnconfigured(func(server string) bool { return server != "gone" })
	if restarted.CopyCount("gone") != 0 || restarted.CopyCount("b") != 1 {
		t.Errorf("copies known: gone %d, b %d; want 0 and 1", restarted.CopyCount("gone"), restarted.CopyCount("b"))
	}
	data, err = restarted.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte("gone")) {
		t.Error("the next whole write still holds the server gone")
	}
}

// Copies found and then found no copies any more (a server churning its
// URIs) take no room among those restored: a bridge's copies journaled
// after 410,000 such pairs were all dropped at a restart.
func TestCopiesNoLongerCopiesTakeNoRoomInARestore(t *testing.T) {
	data := []byte(servedMagic)
	for i := range maxRestoredCopies + 10_000 {
		data = appendEntry(data, entryCopy, copyPayload(nil, "churn", uint64(i), copyFound))
		data = appendEntry(data, entryCopy, copyPayload(nil, "churn", uint64(i), copyNone))
	}
	k := resource.Key{Server: "b", URI: "doc://b/c"}
	data = appendEntry(data, entryCopy, copyPayload(nil, k.Server, uriKey(k.URI), copyPassedBack))
	var s ServedLists
	if _, err := s.Restore(data); err != nil {
		t.Fatal(err)
	}
	if !s.IsPassedBack(k) || s.CopyCount("churn") != 0 {
		t.Errorf("after churn: the bridge's copy passed back %v, churned copies known %d; want true, 0", s.IsPassedBack(k), s.CopyCount("churn"))
	}
}

// A server renamed in the configuration serves the texts contextd served
// under its old name: once the old name is removed (a reload) or not
// configured (a start), its reads are forgotten and the new name's texts
// are no copies of anything contextd serves; another server's reads stay.
func TestReadsOfAServerRemovedAreForgotten(t *testing.T) {
	page := func(i int) []resource.Content {
		return []resource.Content{{Text: fmt.Sprintf("Page %d of the runbook: vacuum the tables nightly, reindex weekly, and page the owner.\n", i)}}
	}
	fill := func(s *ServedLists) {
		for i := range 3 {
			s.NoteRead(resource.Key{Server: "ok", URI: fmt.Sprintf("file:///doc%d.md", i)}, page(i))
		}
		s.NoteRead(resource.Key{Server: "docs", URI: "doc://9"}, page(9))
	}
	renamed := func(s *ServedLists, i int) Copy {
		return s.ServedBack(resource.Key{Server: "ok2", URI: fmt.Sprintf("file:///doc%d.md", i)}, page(i))
	}
	var s ServedLists
	fill(&s)
	if c := renamed(&s, 0); len(c.Of) != 1 {
		t.Fatalf("before the old name was removed: %+v; want a copy of ok's page", c)
	}
	s.Removed("ok")
	for i := range 3 {
		if c := renamed(&s, i); len(c.Of) != 0 {
			t.Errorf("page %d after a reload removed ok: %+v; want no copy", i, c)
		}
	}
	if c := renamed(&s, 9); len(c.Of) != 1 || c.Of[0].Server != "docs" {
		t.Errorf("docs' page: %+v; want still a copy of it", c)
	}

	var before ServedLists
	fill(&before)
	data, err := before.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var restarted ServedLists
	if _, err := restarted.Restore(data); err != nil {
		t.Fatal(err)
	}
	restarted.ForgetUnconfigured(func(server string) bool { return server != "ok" })
	if c := renamed(&restarted, 1); len(c.Of) != 0 {
		t.Errorf("after a restart without ok: %+v; want no copy", c)
	}
	if c := renamed(&restarted, 9); len(c.Of) != 1 {
		t.Errorf("docs' page after the restart: %+v; want still a copy of it", c)
	}
	if data, err = restarted.MarshalBinary(); err != nil || bytes.Contains(data, []byte("file:///doc1.md")) {
		t.Errorf("the next whole write still holds ok's reads (%v)", err)
	}
}

// Two names swapped in the configuration (each now points at the other's
// server): the reads answered under each name were of the other's texts
// now, and are forgotten, so neither is a copy of the other.
func TestNamesSwappedAreNoCopiesOfEachOther(t *testing.T) {
	page := func(set string, i int) []resource.Content {
		return []resource.Content{{Text: fmt.Sprintf("Set %s, page %d of the runbook: vacuum the tables nightly, reindex weekly.\n", set, i)}}
	}
	var s ServedLists
	for i := range 3 {
		s.NoteRead(resource.Key{Server: "alpha", URI: fmt.Sprintf("a://%d", i)}, page("a", i))
		s.NoteRead(resource.Key{Server: "beta", URI: fmt.Sprintf("b://%d", i)}, page("b", i))
	}
	s.Repointed("alpha", false, time.Now().Add(time.Hour))
	s.Repointed("beta", false, time.Now().Add(time.Hour))
	for i := range 3 {
		if c := s.ServedBack(resource.Key{Server: "beta", URI: fmt.Sprintf("a://%d", i)}, page("a", i)); len(c.Of) != 0 {
			t.Errorf("beta serving alpha's old page %d: %+v; want no copy", i, c)
		}
		if c := s.ServedBack(resource.Key{Server: "alpha", URI: fmt.Sprintf("b://%d", i)}, page("b", i)); len(c.Of) != 0 {
			t.Errorf("alpha serving beta's old page %d: %+v; want no copy", i, c)
		}
	}
}

// A page a bridge passes back is read under the bridge's names after
// contextd answered it under its own: the page is no copy of those, even
// once they outnumber maxPerText, a host reads it again, and the bridge
// is renamed at each reload. Each of the bridge's is still a copy of it.
// A host reading the copies a bridge had listed made the honest server
// withheld 3 s after the bridge's first rename.
func TestThePageABridgeCopiesIsNoCopyOfTheCopies(t *testing.T) {
	text := []resource.Content{{Text: "Runbook: drain the node, cordon it, then roll the deployment back and watch the error rate.\n"}}
	origin := resource.Key{Server: "alpha", URI: "doc://alpha/runbook"}
	var s ServedLists
	s.NoteRead(origin, text)
	for i := range 3 * (maxPerText + 1) {
		bridge := fmt.Sprintf("br%d", i/(maxPerText+1))
		s.NoteRead(resource.Key{Server: bridge, URI: fmt.Sprintf("hub://up/%d", i)}, text)
		if i%(maxPerText+1) == maxPerText {
			s.Removed(bridge) // renamed by a reload
		}
		if i == 2*maxPerText {
			s.NoteRead(origin, text) // a host reads it again
		}
		if c := s.ServedBack(origin, text); len(c.Of) != 0 {
			t.Fatalf("after %d reads of the bridge's copies: the page they copy is %+v; want no copy", i+1, c)
		}
	}
	c := s.ServedBack(resource.Key{Server: "br9", URI: "hub://up/next"}, text)
	if !c.Equal || !slices.Contains(c.Of, origin) {
		t.Errorf("the bridge's next copy: %+v; want an equal copy of %v among others", c, origin)
	}
	// A restart keeps the origin's read among a text's: its record holds
	// every read appended as answered, the bridge's too.
	var reads []servedRead
	base := time.Now()
	for i := range 3 * maxPerText {
		k := resource.Key{Server: "br", URI: fmt.Sprintf("hub://up/%d", i)}
		if i == 0 {
			k = origin
		}
		reads = append(reads, servedRead{key: k, digest: [32]byte{1}, first: base.Add(time.Duration(i) * time.Second), at: base.Add(time.Duration(i) * time.Second)})
	}
	kept := compactReads(reads, maxServedReads)
	if len(kept) != maxPerText || kept[0].key != origin || kept[len(kept)-1].key != reads[len(reads)-1].key {
		t.Errorf("a restart kept %d reads of a text read under %d resources: %v; want %d, the origin's and the latest", len(kept), len(reads), kept, maxPerText)
	}
	// The origin's first read forgotten (pushed out of the bound, or
	// private across a restart) and the page read again: the bridge's
	// copy, answered while the origin's read was remembered, is no
	// origin, and stays a copy.
	var forgot ServedLists
	hub := resource.Key{Server: "hub", URI: "hub://up/1"}
	forgot.NoteRead(origin, text)
	forgot.NoteRead(hub, text)
	forgot.mu.Lock()
	forgot.dropReads(func(k resource.Key) bool { return k == origin })
	forgot.mu.Unlock()
	forgot.NoteRead(origin, text)
	if c := forgot.ServedBack(hub, text); !slices.Contains(c.Of, origin) {
		t.Errorf("the bridge's copy once the origin's first read was forgotten: %+v; want a copy of %v", c, origin)
	}
	// Two reads of one text answered in the same instant: neither is the
	// other's origin.
	var tie ServedLists
	tie.NoteRead(origin, text)
	tie.NoteRead(hub, text)
	tie.mu.Lock()
	tie.reads[1].first = tie.reads[0].first
	tie.mu.Unlock()
	if c := tie.ServedBack(hub, text); !slices.Contains(c.Of, origin) {
		t.Errorf("a copy answered in the same instant as the origin: %+v; want a copy of %v", c, origin)
	}
	// A text answered first under another resource still makes the
	// later one a copy, read again or not.
	var t2 ServedLists
	other := resource.Key{Server: "beta", URI: "doc://beta/runbook"}
	t2.NoteRead(origin, text)
	t2.NoteRead(other, text)
	t2.NoteRead(other, text)
	if c := t2.ServedBack(other, text); len(c.Of) != 1 || c.Of[0] != origin {
		t.Errorf("a page answered after another with its text: %+v; want a copy of %v", c, origin)
	}
}
