package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/index/indextest"
	"github.com/contextd/contextd/internal/resource"
	"github.com/contextd/contextd/internal/store/pgstore"
	"github.com/contextd/contextd/internal/store/pgstore/pgtest"
)

func open(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func rec(server, uri string, dim int) index.Record {
	v := make([]float32, dim)
	v[len(uri)%dim] = 1
	return index.Record{Desc: resource.Descriptor{Server: server, URI: uri, Name: uri, Audience: []string{"assistant"}, Size: 12},
		Hash: "h-" + uri, Vec: v}
}

func TestMigrateTwiceAndConcurrently(t *testing.T) {
	url := pgtest.URL(t)
	done := make(chan error, 3)
	for range 3 {
		go func() {
			s, err := pgstore.Open(context.Background(), url)
			if err == nil {
				s.Close()
			}
			done <- err
		}()
	}
	for range 3 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	open(t, url) // and once more, with everything applied
}

func TestLeaseFencesAStaleOwner(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.URL(t))
	const ttl = 300 * time.Millisecond
	tokA, ok, err := s.Acquire(ctx, "srv", "A", ttl)
	if err != nil || !ok {
		t.Fatalf("A acquire: %v %v", ok, err)
	}
	if _, ok, _ := s.Acquire(ctx, "srv", "B", ttl); ok {
		t.Fatal("B took a live lease")
	}
	w := pgstore.Write{Server: "srv", Holder: "A", Token: tokA, Embedder: "e/4", Put: []index.Record{rec("srv", "a://1", 4)}}
	if err := s.Apply(ctx, w); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	tokB, ok, err := s.Acquire(ctx, "srv", "B", ttl)
	if err != nil || !ok || tokB <= tokA {
		t.Fatalf("B takeover after expiry: token %d (A had %d), %v %v", tokB, tokA, ok, err)
	}
	// A's late write and renewal are rejected and change nothing.
	late := w
	late.Put = []index.Record{rec("srv", "a://late", 4)}
	if err := s.Apply(ctx, late); !errors.Is(err, pgstore.ErrFenced) {
		t.Fatalf("stale owner's write: %v; want ErrFenced", err)
	}
	if ok, err := s.Renew(ctx, "srv", "A", tokA, ttl); ok || err != nil {
		t.Fatalf("stale renew = %v, %v", ok, err)
	}
	got, err := s.Get(ctx, "e/4", []resource.Key{{Server: "srv", URI: "a://late"}, {Server: "srv", URI: "a://1"}})
	if err != nil || len(got) != 1 || got[0].Desc.URI != "a://1" {
		t.Fatalf("Get after the fenced write = %+v, %v", got, err)
	}
	// An expired lease nobody took renews with its token.
	time.Sleep(ttl + 50*time.Millisecond)
	if ok, err := s.Renew(ctx, "srv", "B", tokB, ttl); !ok || err != nil {
		t.Fatalf("renew of an expired lease nobody took = %v, %v", ok, err)
	}
	if err := s.Release(ctx, "srv", "B", tokB); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Acquire(ctx, "srv", "A", ttl); !ok {
		t.Fatal("a released lease was not free")
	}
}

func TestApplyLoadAndChangeLog(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.URL(t))
	tok, _, err := s.Acquire(ctx, "srv", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var put []index.Record
	for i := range 25 {
		put = append(put, rec("srv", fmt.Sprintf("a://%02d", i), 8))
	}
	put[3].Content = &index.RecordContent{Stamp: "12||", Hash: "ch", At: time.Now().UTC().Truncate(time.Microsecond), Text: "some text",
		Vecs: [][]float32{{1, 0, 0, 0, 0, 0, 0, 0}, nil, {0, 1, 0, 0, 0, 0, 0, 0}}}
	tpl := []resource.Template{{Server: "srv", URITemplate: "a://{x}", Name: "x"}}
	if err := s.Apply(ctx, pgstore.Write{Server: "srv", Holder: "A", Token: tok, Embedder: "e/8", Put: put, Templates: tpl, LastSync: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ctx, pgstore.Write{Server: "srv", Holder: "A", Token: tok, Embedder: "e/8", Deleted: []string{"a://00"}}); err != nil {
		t.Fatal(err)
	}
	var loaded []index.Record
	seq, err := s.Load(ctx, "e/8", "", 10, func(rs []index.Record) error {
		if len(rs) > 10 {
			t.Errorf("batch of %d", len(rs))
		}
		loaded = append(loaded, rs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded) != 24 {
		t.Fatalf("loaded %d records; want 24", len(loaded))
	}
	byURI := map[string]index.Record{}
	for _, r := range loaded {
		byURI[r.Desc.URI] = r
	}
	if diff := cmp.Diff(put[3], byURI["a://03"]); diff != "" {
		t.Errorf("record round trip (-put +loaded):\n%s", diff)
	}
	if n, _ := s.Load(ctx, "other/8", "", 10, func(rs []index.Record) error { t.Error("another embedder's records loaded"); return nil }); n != seq {
		t.Errorf("seq %d vs %d", n, seq)
	}
	ch, err := s.Changes(ctx, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ch) != 27 || ch[len(ch)-1].Seq != seq || ch[len(ch)-1].URI != "a://00" {
		t.Fatalf("change log: %d entries, last %+v; want 27 ending with the delete at seq %d", len(ch), ch[len(ch)-1], seq)
	}
	srv, err := s.Servers(ctx)
	if err != nil || len(srv) != 1 || !cmp.Equal(srv[0].Templates, tpl) || srv[0].LastSync.IsZero() {
		t.Fatalf("Servers = %+v, %v", srv, err)
	}
	// Pruning past a reader's position makes it reload.
	time.Sleep(20 * time.Millisecond)
	if n, err := s.Prune(ctx, time.Millisecond); err != nil || n != 27 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if _, err := s.Changes(ctx, 5, 10); !errors.Is(err, pgstore.ErrBehind) {
		t.Fatalf("Changes behind the pruned log: %v; want ErrBehind", err)
	}
	if c, err := s.Changes(ctx, seq, 10); err != nil || len(c) != 0 {
		t.Fatalf("Changes at the head: %v %v", c, err)
	}
}

func TestListenWakes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := open(t, pgtest.URL(t))
	woke := make(chan struct{}, 16)
	go s.Listen(ctx, func() {
		select {
		case woke <- struct{}{}:
		default:
		}
	})
	<-woke // the first wake follows LISTEN
	tok, _, _ := s.Acquire(ctx, "srv", "A", time.Minute)
	if err := s.Apply(ctx, pgstore.Write{Server: "srv", Holder: "A", Token: tok, Embedder: "e/4", Put: []index.Record{rec("srv", "a://1", 4)}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-woke:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up after a write")
	}
}

func TestRedactHidesThePassword(t *testing.T) {
	got := pgstore.Redact("postgres://u:s3cret@h:5432/db")
	if got != "postgres://u:xxxxx@h:5432/db" {
		t.Errorf("Redact = %q", got)
	}
	_, err := pgstore.Open(context.Background(), "postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=1")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open of an unreachable database: %v", err)
	}
	// A password given as a parameter, as libpq and pgx take it.
	if got := pgstore.Redact("postgres://h/db?password=s3cret&sslmode=disable"); got != "postgres://h/db?password=xxxxx&sslmode=disable" {
		t.Errorf("Redact = %q", got)
	}
	_, err = pgstore.Open(context.Background(), "postgres://u@127.0.0.1:1/db?connect_timeout=1&password=s3cret")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Open of an unreachable database, password as a parameter: %v", err)
	}
	// Passwords Go's parser reads as a port and a fragment, or a path,
	// pgx as written.
	for _, pw := range []string{"2024#Winter!", "42/Answer!x", "Tr0ub^dor3x"} {
		raw := "postgres://contextd:" + pw + "@127.0.0.1:1/contextd?connect_timeout=1"
		if got := pgstore.Redact(raw); strings.Contains(got, pw) || strings.Contains(got, "Winter") || strings.Contains(got, "Answer") {
			t.Errorf("Redact(%q) = %q", raw, got)
		}
		if _, err := pgstore.Open(context.Background(), raw); err == nil || strings.Contains(err.Error(), "Winter") || strings.Contains(err.Error(), "Answer") || strings.Contains(err.Error(), "dor3x") {
			t.Errorf("Open of an unreachable database: %v", err)
		}
	}
}

// Another replica's bad write of content_vecs (here 8 MB of zero bytes,
// which decoded as 8 million "no vector" entries took gigabytes before the
// reader served) costs a reader no more than the blob: the record loads
// with its text and no vectors, which Index.Apply treats like content whose
// vectors do not match its text (skipped, read and embedded again).
func TestMalformedContentVecsLoadWithoutVectors(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := open(t, url)
	tok, _, err := s.Acquire(ctx, "srv", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var put []index.Record
	emb := &indextest.BagEmbedder{}
	for _, uri := range []string{"a://zeros", "a://cut", "a://tag", "a://good"} {
		r := rec("srv", uri, emb.Dim())
		pv, err := emb.Embed(ctx, "some text")
		if err != nil {
			t.Fatal(err)
		}
		r.Content = &index.RecordContent{Stamp: index.ContentStamp(r.Desc), Hash: "ch", At: time.Now().UTC().Truncate(time.Microsecond), Text: "some text",
			Vecs: [][]float32{pv}}
		put = append(put, r)
	}
	if err := s.Apply(ctx, pgstore.Write{Server: "srv", Holder: "A", Token: tok, Embedder: "e/64", Put: put}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for uri, blob := range map[string][]byte{
		"a://zeros": make([]byte, 8<<20),
		"a://cut":   {1, 8, 0, 0, 0, 0, 0, 128}, // a vector of 8 components, 3 bytes of them
		"a://tag":   {2},
	} {
		if _, err := conn.Exec(ctx, "UPDATE descriptors SET content_vecs = $1 WHERE uri = $2", blob, uri); err != nil {
			t.Fatal(err)
		}
	}

	var loaded []index.Record
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := s.Load(ctx, "e/64", "", 10, func(rs []index.Record) error { loaded = append(loaded, rs...); return nil }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("Load allocated %d MB for an 8 MB blob, want at most 64 MB", got>>20)
	}
	if len(loaded) != 4 {
		t.Fatalf("loaded %d records, want 4", len(loaded))
	}
	for _, r := range loaded {
		if r.Content == nil || r.Content.Text != "some text" {
			t.Errorf("%s: content %+v, want the text kept", r.Desc.URI, r.Content)
			continue
		}
		if want := r.Desc.URI == "a://good"; (r.Content.Vecs != nil) != want {
			t.Errorf("%s: %d vectors (nil: %t), want them only for the undamaged record", r.Desc.URI, len(r.Content.Vecs), r.Content.Vecs == nil)
		}
	}

	// A follower's index installs every descriptor and the undamaged
	// content; the damaged content is left to be read and embedded again.
	ix, err := index.Open(ctx, index.Options{Embedder: emb, QueryCache: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if n, err := ix.Apply(ctx, loaded...); err != nil || n != 4 {
		t.Fatalf("Apply = %d, %v; want 4", n, err)
	}
	for _, r := range loaded {
		if has, _ := ix.HasContent(r.Desc.Key()); has != (r.Desc.URI == "a://good") {
			t.Errorf("%s: content installed %v, want it only for the undamaged record", r.Desc.URI, has)
		}
	}
}

// PostgreSQL's text and jsonb cannot hold U+0000: a resource whose name or
// text holds one is stored with U+FFFD in its place, a URI holding one is
// not stored, and the write of the others goes through.
func TestNULBytesDoNotFailAWrite(t *testing.T) {
	ctx := context.Background()
	s := open(t, pgtest.URL(t))
	tok, _, err := s.Acquire(ctx, "srv", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	named := rec("srv", "a://named", 4)
	named.Desc.Name = "bad\x00name"
	named.Desc.MIMEType, named.Desc.LastModified = "text/plain\x00", "2026\x00"
	named.Content = &index.RecordContent{Stamp: index.ContentStamp(named.Desc), Hash: "ch", At: time.Now().UTC().Truncate(time.Microsecond), Text: "text\x00with a NUL"}
	escaped := rec("srv", "a://escaped", 4)
	escaped.Desc.Name = `a backslash: \u0000 as written`
	w := pgstore.Write{Server: "srv", Holder: "A", Token: tok, Embedder: "e/4",
		Put:       []index.Record{named, escaped, rec("srv", "a://nul\x00uri", 4), rec("srv", "a://plain", 4)},
		Deleted:   []string{"a://gone\x00"},
		Templates: []resource.Template{{Server: "srv", URITemplate: "a://t/{id}", Name: "t\x00"}}, LastSync: time.Now()}
	if err := s.Apply(ctx, w); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	got := map[string]index.Record{}
	if _, err := s.Load(ctx, "e/4", "srv", 10, func(rs []index.Record) error {
		for _, r := range rs {
			got[r.Desc.URI] = r
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("loaded %d records; want a://named, a://escaped and a://plain", len(got))
	}
	if r := got["a://named"]; r.Desc.Name != "bad\uFFFDname" || r.Content == nil || r.Content.Text != "text\uFFFDwith a NUL" || r.Content.Stamp != index.ContentStamp(r.Desc) {
		t.Errorf("a://named: name %q, content %+v; want U+FFFD for the NULs", r.Desc.Name, r.Content)
	}
	if r := got["a://escaped"]; r.Desc.Name != `a backslash: \u0000 as written` {
		t.Errorf("a://escaped: name %q; want it as written", r.Desc.Name)
	}
	rows, err := s.Servers(ctx)
	if err != nil || len(rows) != 1 || len(rows[0].Templates) != 1 || rows[0].Templates[0].Name != "t\uFFFD" {
		t.Errorf("servers: %+v, %v; want the template, U+FFFD for its NUL", rows, err)
	}
}
