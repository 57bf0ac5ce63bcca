package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"flag"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/eval/metrics"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// sample returns results for three strategies with fixed numbers, one of
// them with a name that needs Markdown escaping.
func sample() *Results {
	strategy := func(name string, base float64, p50, p95 time.Duration) Strategy {
		curve := make([]float64, metrics.CurveDepth)
		for k := range curve {
			curve[k] = math.Min(1, base+float64(k)*0.03)
		}
		return Strategy{Name: name, Summary: metrics.Summary{
			Queries: 3000,
			Mean: metrics.Scores{
				HitAt1: curve[0], HitAt5: curve[4], RecallAt5: curve[4], RecallAt10: curve[9],
				MRR: base + 0.1, NDCGAt10: base + 0.15, RecallCurve: curve,
			},
			LatencyP50: p50,
			LatencyP95: p95,
		}}
	}
	return &Results{
		Dataset: "metatool",
		Split:   "test",
		Queries: 3000,
		Strategies: []Strategy{
			strategy("default", 0.4, 1200*time.Microsecond, 3500*time.Microsecond),
			strategy("bm25", 0.35, 250*time.Microsecond, 900*time.Microsecond),
			strategy("dense|glove", 0.25, 800*time.Microsecond, 2*time.Millisecond),
		},
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

func render(t *testing.T, write func(io.Writer) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestJSON(t *testing.T) {
	got := render(t, func(w io.Writer) error { return WriteJSON(w, sample()) })
	golden(t, "results.json", got)

	// The exact key set and order of the issue-4 contract.
	keys := regexp.MustCompile(`"([a-z0-9_]+)":`).FindAllStringSubmatch(string(got), -1)
	var order []string
	for _, k := range keys[:13] {
		order = append(order, k[1])
	}
	want := []string{"dataset", "split", "queries", "strategies", "name", "ndcg_at_10", "recall_at_5",
		"recall_at_10", "hit_at_1", "hit_at_5", "mrr", "latency_p50_ms", "latency_p95_ms"}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("JSON keys (-want +got):\n%s", diff)
	}
	var decoded struct {
		Strategies []map[string]any `json:"strategies"`
	}
	if err := json.Unmarshal(got, &decoded); err != nil {
		t.Fatal(err)
	}
	if n := len(decoded.Strategies); n != 3 {
		t.Fatalf("%d strategies, want 3", n)
	}
	if got := decoded.Strategies[0]["latency_p50_ms"]; got != 1.2 {
		t.Errorf("latency_p50_ms = %v, want 1.2", got)
	}
}

func TestJSONNoStrategies(t *testing.T) {
	got := render(t, func(w io.Writer) error {
		return WriteJSON(w, &Results{Dataset: "d", Split: "s"})
	})
	if !bytes.Contains(got, []byte(`"strategies": []`)) {
		t.Errorf("no strategies should print an empty list, got\n%s", got)
	}
}

func TestMarkdown(t *testing.T) {
	golden(t, "report.md", render(t, func(w io.Writer) error { return WriteMarkdown(w, sample(), ChartFile) }))
	noChart := render(t, func(w io.Writer) error { return WriteMarkdown(w, sample(), "") })
	if bytes.Contains(noChart, []byte("![")) {
		t.Error("WriteMarkdown with no chart links an image")
	}
}

// TestChartSVG checks that the chart is well-formed XML, names every
// strategy, and draws one 20-point line per strategy in the strategy's
// colour.
func TestChartSVG(t *testing.T) {
	r := sample()
	got := render(t, func(w io.Writer) error { return WriteChart(w, r, "svg") })
	again := render(t, func(w io.Writer) error { return WriteChart(w, r, "svg") })
	if !bytes.Equal(got, again) {
		t.Error("two renderings of the same results differ")
	}

	var texts []string
	var curves []string // stroke colours of paths with CurveDepth vertices
	dec := xml.NewDecoder(bytes.NewReader(got))
	dec.Strict = true
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = el.Name.Local
			}
			if el.Name.Local == "path" {
				var d, style string
				for _, a := range el.Attr {
					switch a.Name.Local {
					case "d":
						d = a.Value
					case "style":
						style = a.Value
					}
				}
				if strings.Count(d, "M") == 1 && strings.Count(d, "L") == metrics.CurveDepth-1 && !strings.Contains(d, "Z") {
					curves = append(curves, regexp.MustCompile(`stroke:(#[0-9A-Fa-f]{6})`).FindStringSubmatch(style)[1])
				}
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(el)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "svg" {
		t.Errorf("root element %q, want svg", root)
	}
	if len(curves) != len(r.Strategies) {
		t.Errorf("%d lines of %d points, want one per strategy (%d)", len(curves), metrics.CurveDepth, len(r.Strategies))
	}
	seen := map[string]bool{}
	for _, c := range curves {
		if seen[c] {
			t.Errorf("two lines share the colour %s", c)
		}
		seen[c] = true
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"default", "bm25", "dense|glove", "recall@k", "k (documents considered)", "metatool / test"} {
		if !strings.Contains(all, want) {
			t.Errorf("SVG has no text %q; texts:\n%s", want, all)
		}
	}
}

func TestChartPNG(t *testing.T) {
	got := render(t, func(w io.Writer) error { return WriteChart(w, sample(), "png") })
	img, err := png.Decode(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("PNG is %v, want a readable size", b)
	}
	if err := WriteChart(io.Discard, sample(), "gif"); err == nil {
		t.Error("WriteChart accepted format gif")
	}
}

func TestWriteDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if err := WriteDir(dir, sample()); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]byte{
		JSONFile:     render(t, func(w io.Writer) error { return WriteJSON(w, sample()) }),
		MarkdownFile: render(t, func(w io.Writer) error { return WriteMarkdown(w, sample(), ChartFile) }),
		ChartFile:    render(t, func(w io.Writer) error { return WriteChart(w, sample(), "svg") }),
	} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the writer's output", name)
		}
	}
}

func TestInvalidResults(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Results)
		want   string
	}{
		{"NaN", func(r *Results) { r.Strategies[1].Summary.Mean.MRR = math.NaN() }, `report: strategy "bm25": a metric is NaN`},
		{"short curve", func(r *Results) { r.Strategies[0].Summary.Mean.RecallCurve = []float64{1} },
			`report: strategy "default": recall curve has 1 points, want 20`},
		{"duplicate name", func(r *Results) { r.Strategies[2].Name = "default" }, `report: strategy "default" appears twice`},
		{"no name", func(r *Results) { r.Strategies[0].Name = "" }, `report: strategy 1 has no name`},
	}
	for _, tt := range tests {
		r := sample()
		tt.modify(r)
		for _, write := range []func(io.Writer) error{
			func(w io.Writer) error { return WriteJSON(w, r) },
			func(w io.Writer) error { return WriteMarkdown(w, r, "") },
			func(w io.Writer) error { return WriteChart(w, r, "svg") },
			func(io.Writer) error { return WriteDir(t.TempDir(), r) },
		} {
			if err := write(io.Discard); err == nil || err.Error() != tt.want {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
			}
		}
	}
}
