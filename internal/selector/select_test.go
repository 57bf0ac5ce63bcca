package selector

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/contextd/contextd/internal/budget"
	"github.com/contextd/contextd/internal/resource"
)

// wordCounter is the fake Counter: one token per whitespace-separated word,
// so expected counts can be read off the test data.
type wordCounter struct{}

func (wordCounter) Count(s string) int { return len(strings.Fields(s)) }

// pricyRunes charges two tokens per rune, so that with a budget of 1 not
// even one rune fits.
type pricyRunes struct{}

func (pricyRunes) Count(s string) int { return 2 * utf8.RuneCountInString(s) }

// fakeReads serves resources/read results from a map and logs every call.
type fakeReads struct {
	contents map[resource.Key][]Content
	errs     map[resource.Key]error
	calls    []string // "server uri", in call order
}

func (f *fakeReads) read(ctx context.Context, server, uri string) ([]Content, error) {
	f.calls = append(f.calls, server+" "+uri)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k := resource.Key{Server: server, URI: uri}
	if err, ok := f.errs[k]; ok {
		return nil, err
	}
	cs, ok := f.contents[k]
	if !ok {
		return nil, fmt.Errorf("resource %s not found", uri)
	}
	return append([]Content(nil), cs...), nil
}

func cand(uri string) Candidate { return Candidate{Server: "s", URI: uri} }

func key(uri string) resource.Key { return resource.Key{Server: "s", URI: uri} }

func text(s string) Content { return Content{Text: s} }

func blob(b []byte) Content { return Content{Blob: b, IsBlob: true} }

// lines returns n lines of w words each: n·w tokens under wordCounter.
func lines(n, w int) string { return linesOf("w", n, w) }

// linesOf is lines with another word, for a text that is not a duplicate.
func linesOf(word string, n, w int) string {
	return strings.Repeat(strings.TrimSpace(strings.Repeat(word+" ", w))+"\n", n)
}

func TestSelect(t *testing.T) {
	errBoom := errors.New("upstream: boom")
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	tests := []struct {
		name      string
		req       Request
		ranked    []Candidate
		contents  map[resource.Key][]Content
		errs      map[resource.Key]error
		count     budget.Counter // wordCounter if nil
		want      Result
		wantCalls []string
	}{
		{
			name:   "everything fits, in rank order",
			req:    Request{TokenBudget: 100},
			ranked: []Candidate{cand("a"), cand("b"), cand("c")},
			contents: map[resource.Key][]Content{
				key("a"): {text(lines(2, 5))}, key("b"): {text(lines(1, 3))}, key("c"): {text("one")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text(lines(2, 5)), Tokens: 10}}, Tokens: 10, Reason: "rank 1, fits whole (10 tokens)"},
					{Candidate: cand("b"), Rank: 2, Contents: []ItemContent{{Content: text(lines(1, 3)), Tokens: 3}}, Tokens: 3, Reason: "rank 2, fits whole (3 tokens)"},
					{Candidate: cand("c"), Rank: 3, Contents: []ItemContent{{Content: text("one"), Tokens: 1}}, Tokens: 1, Reason: "rank 3, fits whole (1 token)"},
				},
				TotalTokens: 14, Reads: 3,
			},
			wantCalls: []string{"s a", "s b", "s c"},
		},
		{
			name:   "overflowing resource is trimmed at a line, the rest are not read",
			req:    Request{TokenBudget: 100},
			ranked: []Candidate{cand("a"), cand("b"), cand("c")},
			contents: map[resource.Key][]Content{
				key("a"): {text(lines(30, 2))}, key("b"): {text(linesOf("v", 30, 2))}, key("c"): {text("x")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text(lines(30, 2)), Tokens: 60}}, Tokens: 60, Reason: "rank 1, fits whole (60 tokens)"},
					{Candidate: cand("b"), Rank: 2, Contents: []ItemContent{{Content: text(linesOf("v", 20, 2)), Tokens: 40, Truncated: true, StartLine: 1, EndLine: 20}}, Tokens: 40, Truncated: true, Reason: "rank 2, truncated to 40 tokens to fit the budget; cut to 80 of 120 bytes"},
				},
				Omitted: []Omitted{
					{Candidate: cand("c"), Rank: 3, Reason: OmitBudgetExhausted, Detail: "budget filled by rank 2"},
				},
				TotalTokens: 100, Reads: 2,
			},
			wantCalls: []string{"s a", "s b"},
		},
		{
			name:   "a big top candidate is trimmed, not dropped",
			req:    Request{TokenBudget: 7},
			ranked: []Candidate{cand("big"), cand("small")},
			contents: map[resource.Key][]Content{
				key("big"): {text(lines(1000, 3))}, key("small"): {text("x")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("big"), Rank: 1, Contents: []ItemContent{{Content: text(lines(2, 3)), Tokens: 6, Truncated: true, StartLine: 1, EndLine: 2}}, Tokens: 6, Truncated: true, Reason: "rank 1, truncated to 6 tokens to fit the budget; cut to 12 of 6000 bytes"},
				},
				Omitted: []Omitted{
					{Candidate: cand("small"), Rank: 2, Reason: OmitBudgetExhausted, Detail: "budget filled by rank 1"},
				},
				TotalTokens: 6, Reads: 1,
			},
			wantCalls: []string{"s big"},
		},
		{
			name:   "a first line longer than the budget is cut at a word",
			req:    Request{TokenBudget: 3},
			ranked: []Candidate{cand("a")},
			contents: map[resource.Key][]Content{
				key("a"): {text("one two three four five\nsix\n")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text("one two three"), Tokens: 3, Truncated: true, StartLine: 1, EndLine: 1}}, Tokens: 3, Truncated: true, Reason: "rank 1, truncated to 3 tokens to fit the budget; cut to 13 of 28 bytes"},
				},
				TotalTokens: 3, Reads: 1,
			},
			wantCalls: []string{"s a"},
		},
		{
			name:   "exactly full: nothing left to read into",
			req:    Request{TokenBudget: 4},
			ranked: []Candidate{cand("a"), cand("b")},
			contents: map[resource.Key][]Content{
				key("a"): {text(lines(2, 2))}, key("b"): {text("x")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text(lines(2, 2)), Tokens: 4}}, Tokens: 4, Reason: "rank 1, fits whole (4 tokens)"},
				},
				Omitted: []Omitted{
					{Candidate: cand("b"), Rank: 2, Reason: OmitBudgetExhausted, Detail: "no tokens left"},
				},
				TotalTokens: 4, Reads: 1,
			},
			wantCalls: []string{"s a"},
		},
		{
			name: "below MinUsefulTokens only a resource declared small enough is read",
			req:  Request{TokenBudget: 50},
			ranked: []Candidate{
				cand("a"),
				cand("unknown-size"),
				{Server: "s", URI: "too-big", Size: 100},
				{Server: "s", URI: "indexed-big", IndexedSize: 100},
				{Server: "s", URI: "small", Size: 10},
			},
			contents: map[resource.Key][]Content{
				key("a"): {text(lines(20, 2))}, key("unknown-size"): {text("x")}, key("too-big"): {text("x")}, key("indexed-big"): {text("x")}, key("small"): {text("three small words")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text(lines(20, 2)), Tokens: 40}}, Tokens: 40, Reason: "rank 1, fits whole (40 tokens)"},
					{Candidate: Candidate{Server: "s", URI: "small", Size: 10}, Rank: 5, Contents: []ItemContent{{Content: text("three small words"), Tokens: 3}}, Tokens: 3, Reason: "rank 5, fits whole (3 tokens)"},
				},
				Omitted: []Omitted{
					{Candidate: cand("unknown-size"), Rank: 2, Reason: OmitBudgetExhausted, Detail: "10 tokens left, fewer than the 32 worth reading a resource of unknown size for"},
					{Candidate: Candidate{Server: "s", URI: "too-big", Size: 100}, Rank: 3, Reason: OmitBudgetExhausted, Detail: "10 tokens left, fewer than the 32 worth reading a resource of 100 bytes for"},
					// No size in the descriptor, but the index read its text.
					{Candidate: Candidate{Server: "s", URI: "indexed-big", IndexedSize: 100}, Rank: 4, Reason: OmitBudgetExhausted, Detail: "10 tokens left, fewer than the 32 worth reading a resource of 100 bytes as indexed for"},
				},
				TotalTokens: 43, Reads: 2,
			},
			wantCalls: []string{"s a", "s small"},
		},
		{
			name:   "a budget below MinUsefulTokens still reads the top candidate",
			req:    Request{TokenBudget: 2},
			ranked: []Candidate{cand("a")},
			contents: map[resource.Key][]Content{
				key("a"): {text("x y\n")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text("x y\n"), Tokens: 2}}, Tokens: 2, Reason: "rank 1, fits whole (2 tokens)"},
				},
				TotalTokens: 2, Reads: 1,
			},
			wantCalls: []string{"s a"},
		},
		{
			name:   "max items stops reading",
			req:    Request{TokenBudget: 100, MaxItems: 2},
			ranked: []Candidate{cand("a"), cand("b"), cand("c"), cand("d")},
			contents: map[resource.Key][]Content{
				key("a"): {text("a")}, key("b"): {text("b")}, key("c"): {text("c")}, key("d"): {text("d")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text("a"), Tokens: 1}}, Tokens: 1, Reason: "rank 1, fits whole (1 token)"},
					{Candidate: cand("b"), Rank: 2, Contents: []ItemContent{{Content: text("b"), Tokens: 1}}, Tokens: 1, Reason: "rank 2, fits whole (1 token)"},
				},
				Omitted: []Omitted{
					{Candidate: cand("c"), Rank: 3, Reason: OmitMaxItems, Detail: "2 items already selected"},
					{Candidate: cand("d"), Rank: 4, Reason: OmitMaxItems, Detail: "2 items already selected"},
				},
				TotalTokens: 2, Reads: 2,
			},
			wantCalls: []string{"s a", "s b"},
		},
		{
			name: "binary descriptor is not read unless binary is wanted",
			req:  Request{TokenBudget: 100},
			ranked: []Candidate{
				{Server: "s", URI: "img", MIMEType: "image/png"},
				{Server: "s", URI: "pdf", MIMEType: "Application/PDF; charset=binary"},
				{Server: "s", URI: "svg", MIMEType: "image/svg+xml"},
			},
			contents: map[resource.Key][]Content{
				key("svg"): {text("<svg/>")},
			},
			want: Result{
				Items: []Item{
					{Candidate: Candidate{Server: "s", URI: "svg", MIMEType: "image/svg+xml"}, Rank: 3, Contents: []ItemContent{{Content: text("<svg/>"), Tokens: 1}}, Tokens: 1, Reason: "rank 3, fits whole (1 token)"},
				},
				Omitted: []Omitted{
					{Candidate: Candidate{Server: "s", URI: "img", MIMEType: "image/png"}, Rank: 1, Reason: OmitBinaryExcluded, Detail: `descriptor MIME type "image/png" is binary`},
					{Candidate: Candidate{Server: "s", URI: "pdf", MIMEType: "Application/PDF; charset=binary"}, Rank: 2, Reason: OmitBinaryExcluded, Detail: `descriptor MIME type "Application/PDF; charset=binary" is binary`},
				},
				TotalTokens: 1, Reads: 1,
			},
			wantCalls: []string{"s svg"},
		},
		{
			name:   "blob-only content is excluded after reading when the descriptor did not say",
			req:    Request{TokenBudget: 100},
			ranked: []Candidate{cand("unknown"), cand("b")},
			contents: map[resource.Key][]Content{
				key("unknown"): {blob(png)}, key("b"): {text("b")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("b"), Rank: 2, Contents: []ItemContent{{Content: text("b"), Tokens: 1}}, Tokens: 1, Reason: "rank 2, fits whole (1 token)"},
				},
				Omitted: []Omitted{
					{Candidate: cand("unknown"), Rank: 1, Reason: OmitBinaryExcluded, Detail: "all 1 non-empty contents are blobs", Read: true},
				},
				TotalTokens: 1, Reads: 2,
			},
			wantCalls: []string{"s unknown", "s b"},
		},
		{
			name:   "mixed content keeps the text and notes the excluded blob",
			req:    Request{TokenBudget: 100},
			ranked: []Candidate{cand("mixed")},
			contents: map[resource.Key][]Content{
				key("mixed"): {text("caption here"), {URI: "s://img", MIMEType: "image/png", Blob: png, IsBlob: true}},
			},
			want: Result{
				Items: []Item{
					{
						Candidate: cand("mixed"), Rank: 1,
						Contents: []ItemContent{{Content: text("caption here"), Tokens: 2}},
						Dropped:  []DroppedContent{{Index: 1, URI: "s://img", MIMEType: "image/png", Reason: OmitBinaryExcluded}},
						Tokens:   2, Reason: "rank 1, fits whole (2 tokens); 1 binary content excluded",
					},
				},
				TotalTokens: 2, Reads: 1,
			},
			wantCalls: []string{"s mixed"},
		},
		{
			name:   "multi-content: pack in order, trim the overflowing text, drop the rest",
			req:    Request{TokenBudget: 25},
			ranked: []Candidate{cand("multi"), cand("next")},
			contents: map[resource.Key][]Content{
				key("multi"): {text(lines(5, 2)), text(lines(15, 2)), text("later one"), text("")},
				key("next"):  {text("x")},
			},
			want: Result{
				Items: []Item{
					{
						Candidate: cand("multi"), Rank: 1,
						Contents: []ItemContent{
							{Content: text(lines(5, 2)), Tokens: 10},
							{Content: text(lines(7, 2)), Tokens: 14, Truncated: true, StartLine: 1, EndLine: 7},
						},
						Dropped: []DroppedContent{
							{Index: 2, Reason: OmitBudgetExhausted},
							{Index: 3, Reason: OmitBudgetExhausted},
						},
						Tokens: 24, Truncated: true,
						Reason: "rank 1, truncated to 24 tokens to fit the budget; content 2 of 4 cut to 28 of 60 bytes; 2 later contents dropped",
					},
				},
				Omitted: []Omitted{
					{Candidate: cand("next"), Rank: 2, Reason: OmitBudgetExhausted, Detail: "budget filled by rank 1"},
				},
				TotalTokens: 24, Reads: 1,
			},
			wantCalls: []string{"s multi"},
		},
		{
			name:   "read failure is omitted with the error and selection goes on",
			req:    Request{TokenBudget: 100},
			ranked: []Candidate{cand("bad"), cand("missing"), cand("good")},
			contents: map[resource.Key][]Content{
				key("good"): {text("fine")},
			},
			errs: map[resource.Key]error{key("bad"): errBoom},
			want: Result{
				Items: []Item{
					{Candidate: cand("good"), Rank: 3, Contents: []ItemContent{{Content: text("fine"), Tokens: 1}}, Tokens: 1, Reason: "rank 3, fits whole (1 token)"},
				},
				Omitted: []Omitted{
					{Candidate: cand("bad"), Rank: 1, Reason: OmitReadFailed, Detail: "upstream: boom", Read: true},
					{Candidate: cand("missing"), Rank: 2, Reason: OmitReadFailed, Detail: "resource missing not found", Read: true},
				},
				TotalTokens: 1, Reads: 3,
			},
			wantCalls: []string{"s bad", "s missing", "s good"},
		},
		{
			name:   "empty results are omitted",
			req:    Request{TokenBudget: 100},
			ranked: []Candidate{cand("none"), cand("blank"), cand("ok")},
			contents: map[resource.Key][]Content{
				key("none"): {}, key("blank"): {text(""), blob(nil)}, key("ok"): {text("ok"), text("")},
			},
			want: Result{
				Items: []Item{
					{
						Candidate: cand("ok"), Rank: 3,
						Contents: []ItemContent{{Content: text("ok"), Tokens: 1}},
						Dropped:  []DroppedContent{{Index: 1, Reason: OmitEmpty}},
						Tokens:   1, Reason: "rank 3, fits whole (1 token); 1 empty content skipped",
					},
				},
				Omitted: []Omitted{
					{Candidate: cand("none"), Rank: 1, Reason: OmitEmpty, Detail: "read returned no contents", Read: true},
					{Candidate: cand("blank"), Rank: 2, Reason: OmitEmpty, Detail: "all 2 contents are empty", Read: true},
				},
				TotalTokens: 1, Reads: 3,
			},
			wantCalls: []string{"s none", "s blank", "s ok"},
		},
		{
			name:   "duplicate candidates are read once; the same URI on another server is another resource",
			req:    Request{TokenBudget: 100},
			ranked: []Candidate{cand("a"), {Server: "t", URI: "a"}, cand("a")},
			contents: map[resource.Key][]Content{
				key("a"): {text("from s")}, {Server: "t", URI: "a"}: {text("from t")},
			},
			want: Result{
				Items: []Item{
					{Candidate: cand("a"), Rank: 1, Contents: []ItemContent{{Content: text("from s"), Tokens: 2}}, Tokens: 2, Reason: "rank 1, fits whole (2 tokens)"},
					{Candidate: Candidate{Server: "t", URI: "a"}, Rank: 2, Contents: []ItemContent{{Content: text("from t"), Tokens: 2}}, Tokens: 2, Reason: "rank 2, fits whole (2 tokens)"},
				},
				Omitted: []Omitted{
					{Candidate: cand("a"), Rank: 3, Reason: OmitDuplicate, Detail: "same server and URI as rank 1"},
				},
				TotalTokens: 4, Reads: 2,
			},
			wantCalls: []string{"s a", "t a"},
		},
		{
			name:   "not even one rune fits: omitted too large, and the budget is full",
			req:    Request{TokenBudget: 1},
			ranked: []Candidate{cand("a"), cand("b")},
			contents: map[resource.Key][]Content{
				key("a"): {text("日本")}, key("b"): {text("x")},
			},
			count: pricyRunes{},
			want: Result{
				Omitted: []Omitted{
					{Candidate: cand("a"), Rank: 1, Reason: OmitTooLarge, Detail: "not even the first character of a text fits in the 1 token left", Read: true},
					{Candidate: cand("b"), Rank: 2, Reason: OmitBudgetExhausted, Detail: "budget full: not even the start of rank 1 fit in the 1 token left"},
				},
				Reads: 1,
			},
			wantCalls: []string{"s a"},
		},
		{
			name:   "no candidates",
			req:    Request{TokenBudget: 10},
			ranked: nil,
			want:   Result{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeReads{contents: tt.contents, errs: tt.errs}
			count := tt.count
			if count == nil {
				count = wordCounter{}
			}
			got, err := Select(t.Context(), tt.req, tt.ranked, f.read, count)
			if err != nil {
				t.Fatalf("Select: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, ignoreValueAndForm); diff != "" {
				t.Errorf("Select result mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, f.calls); diff != "" {
				t.Errorf("reads mismatch (-want +got):\n%s", diff)
			}
			checkInvariants(t, tt.req, tt.ranked, got, count)
		})
	}
}

func TestSelectBlobs(t *testing.T) {
	tk, err := budget.NewTokenizer(budget.EncodingCL100K)
	if err != nil {
		t.Fatal(err)
	}
	small := []byte("\x00\x01\x02 small binary \xff")
	large := make([]byte, 4096)
	for i := range large {
		large[i] = byte(i * 7)
	}
	smallTok := tk.Count(base64.StdEncoding.EncodeToString(small))
	largeTok := tk.Count(base64.StdEncoding.EncodeToString(large))
	const budgetTokens = 200
	if smallTok >= budgetTokens || largeTok <= budgetTokens {
		t.Fatalf("test data: small blob %d tokens, large %d; want small < %d < large", smallTok, largeTok, budgetTokens)
	}
	ranked := []Candidate{
		{Server: "s", URI: "large", MIMEType: "image/png"},
		{Server: "s", URI: "small", MIMEType: "application/octet-stream"},
		{Server: "s", URI: "mixed"},
	}
	f := &fakeReads{contents: map[resource.Key][]Content{
		key("large"): {blob(large)},
		key("small"): {blob(small)},
		key("mixed"): {text("a caption\n"), blob(large), text("after the blob\n")},
	}}
	req := Request{TokenBudget: budgetTokens, IncludeBinary: true}
	got, err := Select(t.Context(), req, ranked, f.read, tk)
	if err != nil {
		t.Fatalf("Select: %v", err)
	}
	caption, after := tk.Count("a caption\n"), tk.Count("after the blob\n")
	want := Result{
		Items: []Item{
			{
				Candidate: ranked[1], Rank: 2,
				Contents: []ItemContent{{Content: blob(small), Tokens: smallTok}},
				Tokens:   smallTok, Reason: fmt.Sprintf("rank 2, fits whole (%d tokens)", smallTok),
			},
			{
				// A blob that does not fit is dropped whole, and later
				// contents that fit are still packed.
				Candidate: ranked[2], Rank: 3,
				Contents: []ItemContent{
					{Content: text("a caption\n"), Tokens: caption},
					{Content: text("after the blob\n"), Tokens: after},
				},
				Dropped:   []DroppedContent{{Index: 1, Reason: OmitBinaryTooLarge, Detail: fmt.Sprintf("blob of 4096 bytes costs more than the %d tokens left", budgetTokens-smallTok-caption)}},
				Tokens:    caption + after,
				Truncated: true,
				Reason:    fmt.Sprintf("rank 3, truncated to %d tokens to fit the budget; 1 blob over budget dropped", caption+after),
			},
		},
		Omitted: []Omitted{
			// Never trimmed, and the budget stays open for the rest.
			{Candidate: ranked[0], Rank: 1, Reason: OmitBinaryTooLarge, Detail: "blob of 4096 bytes costs more than the 200 tokens left", Read: true},
		},
		TotalTokens: smallTok + caption + after,
		Reads:       3,
	}
	if diff := cmp.Diff(want, got, ignoreValueAndForm); diff != "" {
		t.Errorf("Select result mismatch (-want +got):\n%s", diff)
	}
	checkInvariants(t, req, ranked, got, tk)
}

func TestSelectTokenizer(t *testing.T) {
	for _, enc := range []string{budget.EncodingCL100K, budget.EncodingO200K} {
		t.Run(enc, func(t *testing.T) {
			tk, err := budget.NewTokenizer(enc)
			if err != nil {
				t.Fatal(err)
			}
			docs := map[resource.Key][]Content{
				key("readme"): {text("# contextd\n\ncontextd selects MCP resources to fit a token budget.\n\n## Usage\n\nRun `contextd serve`.\n")},
				key("main"):   {text("package main\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}\n")},
				key("notes"):  {text(strings.Repeat("Design note: every read is counted exactly.\n", 50))},
				key("tail"):   {text("never read")},
			}
			ranked := []Candidate{cand("readme"), cand("main"), cand("notes"), cand("tail")}
			first, second := tk.Count(docs[key("readme")][0].Text), tk.Count(docs[key("main")][0].Text)
			req := Request{TokenBudget: first + second + 40}
			f := &fakeReads{contents: docs}
			got, err := Select(t.Context(), req, ranked, f.read, tk)
			if err != nil {
				t.Fatalf("Select: %v", err)
			}
			checkInvariants(t, req, ranked, got, tk)
			if len(got.Items) != 3 || !got.Items[2].Truncated || got.Items[0].Truncated || got.Items[1].Truncated {
				t.Fatalf("Select items = %+v, want readme and main whole and notes truncated", got.Items)
			}
			notes := got.Items[2].Contents[0]
			if !strings.HasSuffix(notes.Text, "\n") || !strings.HasPrefix(docs[key("notes")][0].Text, notes.Text) {
				t.Errorf("notes trimmed to %q, want a prefix ending at a line boundary", notes.Text)
			}
			if notes.Tokens > 40 || notes.Tokens != tk.Count(notes.Text) {
				t.Errorf("notes Tokens = %d, Count = %d, want equal and <= 40", notes.Tokens, tk.Count(notes.Text))
			}
			if diff := cmp.Diff([]string{"s readme", "s main", "s notes"}, f.calls); diff != "" {
				t.Errorf("reads mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectInvalidRequest(t *testing.T) {
	tests := []struct {
		req  Request
		want error
	}{
		{Request{TokenBudget: 0}, ErrInvalidBudget},
		{Request{TokenBudget: -5}, ErrInvalidBudget},
		{Request{TokenBudget: 10, MaxItems: -1}, ErrInvalidMaxItems},
	}
	for _, tt := range tests {
		f := &fakeReads{}
		_, err := Select(t.Context(), tt.req, []Candidate{cand("a")}, f.read, wordCounter{})
		if !errors.Is(err, tt.want) {
			t.Errorf("Select(%+v) error = %v, want %v", tt.req, err, tt.want)
		}
		if len(f.calls) != 0 {
			t.Errorf("Select(%+v) read %v, want no reads", tt.req, f.calls)
		}
	}
}

func TestSelectCancel(t *testing.T) {
	t.Run("during a read", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		f := &fakeReads{contents: map[resource.Key][]Content{key("a"): {text("a")}}}
		read := func(ctx context.Context, server, uri string) ([]Content, error) {
			if uri == "b" {
				cancel()
			}
			return f.read(ctx, server, uri)
		}
		got, err := Select(ctx, Request{TokenBudget: 100}, []Candidate{cand("a"), cand("b"), cand("c")}, read, wordCounter{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Select error = %v, want context.Canceled", err)
		}
		if diff := cmp.Diff(Result{}, got); diff != "" {
			t.Errorf("Select result after cancel (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"s a", "s b"}, f.calls); diff != "" {
			t.Errorf("reads mismatch (-want +got):\n%s", diff)
		}
	})
	t.Run("before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		f := &fakeReads{}
		_, err := Select(ctx, Request{TokenBudget: 100}, []Candidate{cand("a")}, f.read, wordCounter{})
		if !errors.Is(err, context.Canceled) || len(f.calls) != 0 {
			t.Fatalf("Select error = %v, reads %v; want context.Canceled and no reads", err, f.calls)
		}
	})
	t.Run("a read error while the context is live is not a cancellation", func(t *testing.T) {
		read := func(ctx context.Context, server, uri string) ([]Content, error) {
			return nil, fmt.Errorf("upstream timed out: %w", context.DeadlineExceeded)
		}
		got, err := Select(t.Context(), Request{TokenBudget: 100}, []Candidate{cand("a")}, read, wordCounter{})
		if err != nil || len(got.Omitted) != 1 || got.Omitted[0].Reason != OmitReadFailed {
			t.Fatalf("Select = %+v, %v; want a read_failed omission and no error", got, err)
		}
	})
}

func TestBinaryMIME(t *testing.T) {
	tests := map[string]bool{
		"":                             false,
		"text/plain":                   false,
		"text/markdown; charset=utf-8": false,
		"application/json":             false,
		"image/svg+xml":                false,
		"image/png":                    true,
		"IMAGE/JPEG":                   true,
		"audio/mpeg":                   true,
		"video/mp4":                    true,
		"font/woff2":                   true,
		"application/octet-stream":     true,
		" application/pdf ":            true,
		"application/zip":              true,
		"application/gzip":             true,
	}
	for mime, want := range tests {
		if got := binaryMIME(mime); got != want {
			t.Errorf("binaryMIME(%q) = %v, want %v", mime, got, want)
		}
	}
}

// checkInvariants asserts what must hold for every Select result.
func checkInvariants(t *testing.T, req Request, ranked []Candidate, res Result, count budget.Counter) {
	t.Helper()
	total, recount := 0, 0
	for _, it := range res.Items {
		sum := 0
		if (len(it.Contents) == 0) != (it.Form == FormPointer) {
			t.Errorf("item rank %d (%s) has %d contents", it.Rank, it.Form, len(it.Contents))
		}
		if it.Form == FormPointer {
			if n := count.Count(PointerText(it.Candidate)); n != it.Tokens {
				t.Errorf("pointer rank %d: Tokens = %d, recount = %d", it.Rank, it.Tokens, n)
			}
			sum, recount = it.Tokens, recount+it.Tokens
		}
		if it.Unread && it.Form != FormPointer {
			t.Errorf("item rank %d (%s) unread", it.Rank, it.Form)
		}
		for _, c := range it.Contents {
			sum += c.Tokens
			var n int
			switch {
			case c.IsBlob && !req.IncludeBinary:
				t.Errorf("item rank %d returns a blob with IncludeBinary off", it.Rank)
			case c.IsBlob:
				if c.Text != "" {
					t.Errorf("item rank %d: blob content has text %q", it.Rank, c.Text)
				}
				n = count.Count(base64.StdEncoding.EncodeToString(c.Blob))
			default:
				n = count.Count(c.Text)
			}
			if n != c.Tokens {
				t.Errorf("item rank %d: content Tokens = %d, recount = %d", it.Rank, c.Tokens, n)
			}
			recount += n
		}
		if sum != it.Tokens {
			t.Errorf("item rank %d: Tokens = %d, sum of contents = %d", it.Rank, it.Tokens, sum)
		}
		total += it.Tokens
	}
	if total != res.TotalTokens {
		t.Errorf("TotalTokens = %d, sum of items = %d", res.TotalTokens, total)
	}
	if res.TotalTokens > req.TokenBudget || recount > req.TokenBudget {
		t.Errorf("TotalTokens = %d, recount = %d, over budget %d", res.TotalTokens, recount, req.TokenBudget)
	}
	if req.MaxItems > 0 && len(res.Items) > req.MaxItems {
		t.Errorf("%d items, MaxItems %d", len(res.Items), req.MaxItems)
	}

	// Every candidate exactly once, both lists in rank order.
	seen := make([]int, len(ranked))
	for i, it := range res.Items {
		if i > 0 && it.Rank <= res.Items[i-1].Rank {
			t.Errorf("items out of rank order: %d after %d", it.Rank, res.Items[i-1].Rank)
		}
		if it.Rank < 1 || it.Rank > len(ranked) || !reflect.DeepEqual(it.Candidate, ranked[it.Rank-1]) {
			t.Fatalf("item rank %d does not match its candidate", it.Rank)
		}
		seen[it.Rank-1]++
	}
	readOmissions, wasted := 0, 0
	for i, o := range res.Omitted {
		if i > 0 && o.Rank <= res.Omitted[i-1].Rank {
			t.Errorf("omissions out of rank order: %d after %d", o.Rank, res.Omitted[i-1].Rank)
		}
		if o.Rank < 1 || o.Rank > len(ranked) || !reflect.DeepEqual(o.Candidate, ranked[o.Rank-1]) {
			t.Fatalf("omitted rank %d does not match its candidate", o.Rank)
		}
		seen[o.Rank-1]++
		switch o.Reason {
		case OmitBinaryTooLarge, OmitUnsupported:
			// Read, or judged unread from the size estimate (never cut).
			if !o.Read && req.Estimator == nil {
				t.Errorf("omitted rank %d (%s) unread without an estimator", o.Rank, o.Reason)
			}
		case OmitReadFailed, OmitEmpty, OmitTooLarge, OmitDuplicateContent, OmitInvalid:
			if !o.Read {
				t.Errorf("omitted rank %d (%s) not marked read", o.Rank, o.Reason)
			}
		case OmitMaxItems, OmitDuplicate, OmitUserAudience, OmitLowValue:
			if o.Read {
				t.Errorf("omitted rank %d (%s) marked read", o.Rank, o.Reason)
			}
		case OmitBudgetExhausted:
			// Unread, or read and degraded to nothing that fits (a query).
			if o.Read && req.Query == "" {
				t.Errorf("omitted rank %d (%s) marked read without a query", o.Rank, o.Reason)
			}
		case OmitBinaryExcluded:
		default:
			t.Errorf("omitted rank %d: unknown reason %q", o.Rank, o.Reason)
		}
		if o.Read {
			readOmissions++
		}
		switch {
		case o.Reason == OmitReadFailed, o.Reason == OmitEmpty, o.Reason == OmitBinaryExcluded,
			o.Reason == OmitBinaryTooLarge, o.Reason == OmitDuplicateContent, o.Reason == OmitUnsupported,
			o.Reason == OmitInvalid,
			o.Reason == OmitBudgetExhausted && o.Read:
			wasted++ // a duplicate is known only once read
		}
	}
	for i, n := range seen {
		if n != 1 {
			t.Errorf("candidate rank %d appears %d times in Items ∪ Omitted", i+1, n)
		}
	}
	// Reads only for what may be returned: each read is an item or an
	// omission marked Read.
	readItems := 0
	for _, it := range res.Items {
		if !it.Unread {
			readItems++
		}
	}
	if res.Reads != readItems+readOmissions {
		t.Errorf("Reads = %d, want read items %d + read omissions %d", res.Reads, readItems, readOmissions)
	}
	// The brief's form of it. A text so short of budget that not even one
	// rune fits (OmitTooLarge) is the one other way a read is spent; it
	// needs a nearly full budget and is counted here too.
	tooLarge := 0
	for _, o := range res.Omitted {
		if o.Reason == OmitTooLarge {
			tooLarge++
		}
	}
	if res.Reads > len(res.Items)+wasted+tooLarge {
		t.Errorf("Reads = %d > items %d + failed/empty/binary omissions %d + too large %d", res.Reads, len(res.Items), wasted, tooLarge)
	}
}

func TestSelectDropsInvalidItemsKeepsTheRest(t *testing.T) {
	read := func(_ context.Context, _, uri string) ([]Content, error) {
		switch uri {
		case "mixed":
			return []Content{{URI: "mixed#bad", IsBlob: true, Error: "blob is not base64"}, {URI: "mixed#ok", Text: "fine text\n"}}, nil
		default:
			return []Content{{URI: uri, IsBlob: true, Error: "blob is not base64"}}, nil
		}
	}
	res, err := Select(t.Context(), Request{TokenBudget: 100}, []Candidate{{Server: "s", URI: "mixed"}, {Server: "s", URI: "allbad"}}, read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 1 || len(res.Items[0].Contents) != 1 || res.Items[0].Contents[0].URI != "mixed#ok" ||
		len(res.Items[0].Dropped) != 1 || res.Items[0].Dropped[0].Reason != OmitInvalid || res.Items[0].Truncated {
		t.Errorf("items = %+v; want mixed with its good item, the bad one dropped as invalid (not truncation)", res.Items)
	}
	if len(res.Omitted) != 1 || res.Omitted[0].Reason != OmitInvalid || res.Omitted[0].Detail != "blob is not base64" {
		t.Errorf("omitted = %+v; want allbad as invalid_content with the reason", res.Omitted)
	}
}

// MCP 2025-11-25 "Annotations": audience ["user"] marks content meant for
// the user, not the model; it stays out of context unless asked for, and a
// pinned resource is the caller's explicit choice.
func TestSelectAudienceAndPinned(t *testing.T) {
	reads := &fakeReads{contents: map[resource.Key][]Content{
		key("user-only"): {text("shown to the user")},
		key("both"):      {text("for everyone")},
		key("mine"):      {text("the open file")},
	}}
	userOnly := Candidate{Server: "s", URI: "user-only", Audience: []string{"user"}}
	both := Candidate{Server: "s", URI: "both", Audience: []string{"user", "assistant"}}
	pinned := Candidate{Server: "s", URI: "mine", Audience: []string{"user"}, Pinned: true}

	res, err := Select(t.Context(), Request{TokenBudget: 100}, []Candidate{pinned, userOnly, both}, reads.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 2 || res.Items[0].URI != "mine" || res.Items[1].URI != "both" {
		t.Fatalf("items = %+v, want the pinned file then the resource for both audiences", res.Items)
	}
	if !strings.HasPrefix(res.Items[0].Reason, "pinned, fits whole") {
		t.Errorf("pinned item reason = %q", res.Items[0].Reason)
	}
	if len(res.Omitted) != 1 || res.Omitted[0].Reason != OmitUserAudience || res.Omitted[0].Read {
		t.Errorf("omitted = %+v, want user-only left out unread", res.Omitted)
	}
	if slices.Contains(reads.calls, "s user-only") {
		t.Errorf("the user-only resource was read: %v", reads.calls)
	}

	res, err = Select(t.Context(), Request{TokenBudget: 100, IncludeUserAudience: true}, []Candidate{userOnly}, reads.read, wordCounter{})
	if err != nil || len(res.Items) != 1 {
		t.Fatalf("with IncludeUserAudience: %+v, %v; want the user-only resource", res, err)
	}
}

func TestSelectReturnsDuplicateContentOnce(t *testing.T) {
	doc := strings.Repeat("The mirror keeps every server's descriptors in the index and re-lists on change. ", 30)
	reads := &fakeReads{contents: map[resource.Key][]Content{
		{Server: "a", URI: "file:///docs/guide.md"}:    {text(doc)},
		{Server: "b", URI: "https://x/guide"}:          {text(strings.ReplaceAll(doc, ". ", ".\r\n"))}, // same words, other line breaks
		{Server: "a", URI: "file:///docs/guide-v2.md"}: {text(doc + " One more sentence at the end.")}, // nearly the same
		{Server: "a", URI: "file:///docs/other.md"}:    {text(strings.Repeat("Budgets are counted in tokens with tiktoken before anything is packed. ", 8))},
	}}
	ranked := []Candidate{
		{Server: "a", URI: "file:///docs/guide.md"}, {Server: "b", URI: "https://x/guide"},
		{Server: "a", URI: "file:///docs/guide-v2.md"}, {Server: "a", URI: "file:///docs/other.md"},
	}
	res, err := Select(t.Context(), Request{TokenBudget: 10_000}, ranked, reads.read, wordCounter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Items) != 2 || res.Items[0].URI != "file:///docs/guide.md" || res.Items[1].URI != "file:///docs/other.md" {
		t.Fatalf("items = %v, want the guide once and the other document", uris(res.Items))
	}
	want := []string{"the same content as rank 1 (a file:///docs/guide.md)", "nearly the same content as rank 1 (a file:///docs/guide.md)"}
	for i, o := range res.Omitted {
		if o.Reason != OmitDuplicateContent || o.Detail != want[i] || !o.Read {
			t.Errorf("omitted[%d] = %s %q (read %v), want duplicate_content %q", i, o.Reason, o.Detail, o.Read, want[i])
		}
	}
	if res.TotalTokens != res.Items[0].Tokens+res.Items[1].Tokens {
		t.Errorf("duplicates were counted: total %d", res.TotalTokens)
	}
}

func uris(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Server+" "+it.URI)
	}
	return out
}

func TestFingerprintEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []Content
		dup  bool
	}{
		{"different punctuation-only texts", []Content{text("-----")}, []Content{text("*****")}, false},
		{"same punctuation-only text", []Content{text("-----")}, []Content{text("-----")}, true},
		{"nothing usable", []Content{{Error: "bad"}}, []Content{{Error: "bad"}}, false},
		{"same blob", []Content{blob([]byte{1, 2})}, []Content{blob([]byte{1, 2})}, true},
		{"short texts differ by a word", []Content{text("alpha beta")}, []Content{text("alpha gamma")}, false},
		{"code differs by an operator", []Content{text("if balance > limit { return a - b }")}, []Content{text("if balance < limit { return a + b }")}, false},
		{"values differ by case", []Content{text("HANDLER_CODE=AbC123")}, []Content{text("handler_code=abc123")}, false},
		{"same text, other layout", []Content{text("a  b\n\tc")}, []Content{text("a b c")}, true},
		{"a short rule negated", []Content{text(strings.Repeat("Always check the budget before reading. ", 10))}, []Content{text(strings.Repeat("Always check the budget before reading. ", 9) + "Never check the budget before reading.")}, false},
	} {
		if exact, near := fingerprintOf(tc.a).same(fingerprintOf(tc.b)); (exact || near) != tc.dup {
			t.Errorf("%s: exact %v near %v, want duplicate %v", tc.name, exact, near, tc.dup)
		}
	}
}

// ignoreValueAndForm leaves out of comparisons the fields that the tests
// written before values and forms existed do not set; their own tests
// check them.
var ignoreValueAndForm = cmp.Options{
	cmpopts.IgnoreFields(Item{}, "Form", "Value"),
	cmpopts.IgnoreFields(Omitted{}, "Value"),
}
