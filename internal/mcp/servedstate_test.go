package mcp

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/resource"
)

// What a ServedLists answered survives MarshalBinary and Restore: copies,
// near copies and short copies of it are told as before, and a server's
// check, hold and freeze run on; a read answered after the restart is
// kept beside the restored ones.
func TestServedListsRestoreTellsCopiesAsBefore(t *testing.T) {
	page := "# Runbook 7\n\nThis page explains postgres vacuum tuning in depth, part 7.\nIt covers the configuration knobs, the monitoring queries\nand the operational runbook steps that an engineer follows.\n"
	text := func(s string) []resource.Content { return []resource.Content{{Text: s}} }
	a := resource.Key{Server: "a", URI: "doc://a/7"}
	short := resource.Key{Server: "a", URI: "doc://a/short"}
	var old ServedLists
	old.NoteRead(a, text(page))
	old.NoteRead(short, text("ok"))
	old.Check("b", time.Now().Add(time.Hour))
	old.Freeze("c", time.Now().Add(1000*time.Hour)) // past maxMarkAhead
	data, err := old.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}

	var s ServedLists
	later := resource.Key{Server: "a", URI: "doc://a/8"}
	laterPage := strings.ReplaceAll(page, "7", "8") + "It adds a section on freezing.\n"
	s.NoteRead(later, text(laterPage))
	if err := s.Restore(data); err != nil {
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
		{"short", text("ok"), short, false, true},
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
	if !s.Frozen("c") {
		t.Error("c's freeze did not survive the restore")
	}
	if s.frozen["c"].After(time.Now().Add(maxMarkAhead)) {
		t.Errorf("c frozen until %v: want at most %v from now", s.frozen["c"], maxMarkAhead)
	}
}

// Restore keeps the latest maxServedReads of the restored and new reads,
// drops records that cannot be right, and refuses what is no encoding of
// its own, leaving the ServedLists as it was.
func TestServedListsRestoreIsBoundedAndChecked(t *testing.T) {
	var old ServedLists
	for i := range maxServedReads {
		old.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/%d", i)}, []resource.Content{{Text: fmt.Sprintf("page %d of the old run, long enough to be told by its digest alone, %d", i, i)}})
	}
	data, err := old.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var s ServedLists
	for i := range 10 {
		s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("doc://a/new/%d", i)}, []resource.Content{{Text: fmt.Sprintf("page %d of the new run, long enough to be told by its digest alone, %d", i, i)}})
	}
	if err := s.Restore(data); err != nil {
		t.Fatal(err)
	}
	if len(s.reads) != maxServedReads {
		t.Fatalf("%d reads after the restore; want %d", len(s.reads), maxServedReads)
	}
	if got := s.reads[len(s.reads)-1].key.URI; got != "doc://a/new/9" {
		t.Errorf("the latest read is %s; want the new run's last", got)
	}
	if got := s.reads[0].key.URI; got != "doc://a/10" {
		t.Errorf("the oldest read kept is %s; want doc://a/10 (the ten oldest dropped)", got)
	}

	var f servedFile
	f.Version = servedVersion
	f.Reads = []servedRecord{
		{Server: "a", URI: "doc://a/future", At: time.Now().Add(time.Hour).UnixMilli()},
		{Server: "a", URI: "doc://a/unsorted", Sketch: make([]shingleRecord, nearSketch)},
		{Server: "a", URI: "doc://a/long", Sketch: make([]shingleRecord, nearSketch+1)},
		{Server: "a", URI: "doc://a/fine", At: time.Now().UnixMilli()},
	}
	f.Reads[1].Sketch[0].Hash = 9
	var fresh ServedLists
	if err := fresh.Restore(encodeServed(t, f)); err != nil {
		t.Fatal(err)
	}
	if len(fresh.reads) != 1 || fresh.reads[0].key.URI != "doc://a/fine" {
		t.Errorf("restored %v; want only doc://a/fine", fresh.reads)
	}
	f.Version = servedVersion + 1
	for name, bad := range map[string][]byte{"garbage": []byte("not a gob"), "empty": nil, "another version": encodeServed(t, f)} {
		before := fresh.Changes()
		if err := fresh.Restore(bad); err == nil {
			t.Errorf("%s: Restore succeeded", name)
		}
		if len(fresh.reads) != 1 || fresh.Changes() != before {
			t.Errorf("%s: a failed Restore changed the ServedLists", name)
		}
	}
}

func encodeServed(t *testing.T, f servedFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&f); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
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
