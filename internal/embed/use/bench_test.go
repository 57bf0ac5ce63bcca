package use

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/contextd/contextd/internal/cputime"
)

// benchQuery is a 12-word query.
const benchQuery = "how do I list the open pull requests assigned to me today"

// benchDescriptor is a 40-word MCP tool description.
const benchDescriptor = "search_issues: Search GitHub issues and pull requests across repositories with a query " +
	"string, filtered by state, labels, milestone and assignee; returns up to one hundred results sorted by " +
	"the last update, each with its title, number, author, labels and URL."

// benchLongQuery is a multi-step agent task of about 100 tokens.
const benchLongQuery = "First find the failing integration test in the payments service from last night's CI run, " +
	"read its logs and the stack trace, then open the source file that raised the exception and the recent " +
	"commits touching it; summarise what changed, propose a minimal fix with a regression test, and draft " +
	"a pull request description that links the original issue and lists the risks for the on-call reviewer."

func benchEmbed(b *testing.B, text string) {
	e := &Embedder{m: testModel(b)}
	ids, _ := e.Tokenize(text)
	ctx := context.Background()
	b.ReportAllocs()
	var lat []time.Duration
	cpu := startCPU(b)
	for b.Loop() {
		t0 := time.Now()
		if _, err := e.Embed(ctx, text); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu.report()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(len(ids)), "tokens")
}

// A cpuMeter reports the process's CPU time per op, on all threads, as
// cpu-ns/op: the work an op costs, which unlike ns/op does not grow when
// other processes share the cores. It covers the whole benchmark run, so
// start it just before the loop.
type cpuMeter struct {
	b     *testing.B
	start time.Duration
	ok    bool
}

func startCPU(b *testing.B) *cpuMeter {
	t, ok := cputime.Process()
	return &cpuMeter{b: b, start: t, ok: ok}
}

func (c *cpuMeter) report() {
	t, ok := cputime.Process()
	if c.ok && ok && c.b.N > 0 {
		c.b.ReportMetric(float64(t-c.start)/float64(c.b.N), "cpu-ns/op")
	}
}

// BenchmarkEmbedQuery embeds a 12-word query (13 tokens).
func BenchmarkEmbedQuery(b *testing.B) { benchEmbed(b, benchQuery) }

// BenchmarkEmbedDescriptor embeds a 40-word tool description.
func BenchmarkEmbedDescriptor(b *testing.B) { benchEmbed(b, benchDescriptor) }

// BenchmarkEmbedLongQuery embeds a multi-step task query of about 100
// tokens.
func BenchmarkEmbedLongQuery(b *testing.B) { benchEmbed(b, benchLongQuery) }

// BenchmarkEmbedBatch embeds 64 descriptors per op with EmbedBatch and
// reports texts per second over all cores.
func BenchmarkEmbedBatch(b *testing.B) {
	e := &Embedder{m: testModel(b)}
	texts := make([]string, 64)
	for i := range texts {
		texts[i] = fmt.Sprintf("%s (variant %d)", benchDescriptor, i)
	}
	ctx := context.Background()
	b.ReportAllocs()
	cpu := startCPU(b)
	for b.Loop() {
		if _, err := e.EmbedBatch(ctx, texts); err != nil {
			b.Fatal(err)
		}
	}
	cpu.report()
	b.ReportMetric(float64(len(texts)*b.N)/b.Elapsed().Seconds(), "texts/s")
}

// BenchmarkLoad measures what the first use in a process pays: decoding
// the embedded data into float32 weights and building the tokenizer.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newModel(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTokenize tokenizes the descriptor.
func BenchmarkTokenize(b *testing.B) {
	m := testModel(b)
	var s tokScratch
	b.ReportAllocs()
	for b.Loop() {
		m.tok.encode(&s, benchDescriptor)
	}
}

// BenchmarkLinear runs the feed-forward block's first product (94 rows of
// 512 inputs to 1,536 outputs, 74 million multiply-adds) on one goroutine
// with each kernel (the assembly one on float32 and on float16 weights),
// and reports multiply-adds per second.
func BenchmarkLinear(b *testing.B) {
	const rows, in, out = 94, modelDim, ffnDim
	m := testModel(b)
	l := &m.layers[1]
	x := make([]float32, rows*in)
	for i := range x {
		x[i] = float32(i%17)/17 - 0.5
	}
	dst := make([]float32, rows*out)
	run := func(name string, on bool, w matrix) {
		b.Run(name, func(b *testing.B) {
			old := simd
			simd = on
			defer func() { simd = old }()
			cpu := startCPU(b)
			for b.Loop() {
				linear(&splitter{par: 1}, dst, x, rows, in, w, l.ffn1B)
			}
			cpu.report()
			b.ReportMetric(float64(rows*in*out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
	run("go", false, matrix{f32: l.ffn1W.f32})
	if haveSIMD {
		run("simd", true, matrix{f32: l.ffn1W.f32})
	}
	if l.ffn1W.f16 != nil {
		run("simd-f16", true, l.ffn1W)
	}
	// Integer products, the quantization of x included.
	for _, kern := range qKernels() {
		b.Run("int-"+kern.String(), func(b *testing.B) {
			oldK, oldI := qkern, intKernel
			qkern, intKernel = kern, true
			defer func() { qkern, intKernel = oldK, oldI }()
			sp := &splitter{par: 1}
			cpu := startCPU(b)
			for b.Loop() {
				linear(sp, dst, x, rows, in, l.ffn1W, l.ffn1B)
			}
			cpu.report()
			b.ReportMetric(float64(rows*in*out)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// benchTask is a 100-token multi-step agent task (101 tokens) and its
// clauses as the engine splits it (lexical.Clauses; 96 tokens more): the
// texts a Search of the task embeds, in one batch.
var benchTask = []string{
	"I need to prepare a quarterly report: gather every invoice and payment from the accounts database, " +
		"chart the monthly totals against the product price list, attach the stock levels for each product, " +
		"then email the report and the chart to the finance contact and post a message in the team chat " +
		"with a link to the document page, and open an issue in the project tracker for any order whose " +
		"payment is missing or late so that someone follows it up before the next meeting on the calendar",
	"I need to prepare a quarterly report: gather every invoice",
	"payment from the accounts database,",
	"chart the monthly totals against the product price list,",
	"attach the stock levels for each product,",
	"email the report",
	"the chart to the finance contact",
	"post a message in the team chat with a link to the document page,",
	"open an issue in the project tracker for any order whose payment is missing or late so that someone follows it up before the next meeting on the calendar",
}

// BenchmarkEmbedTask embeds benchTask with EmbedBatch, as a Search of the
// task does (the query cache aside), and reports the median op's wall
// time and the CPU time per op on all threads: with the dense layers'
// products in float (float) and in integers (int).
func BenchmarkEmbedTask(b *testing.B) {
	for _, integer := range []bool{false, true} {
		b.Run(map[bool]string{false: "float", true: "int"}[integer], func(b *testing.B) {
			old := intKernel
			intKernel = integer
			defer func() { intKernel = old }()
			benchEmbedTask(b)
		})
	}
}

func benchEmbedTask(b *testing.B) {
	e := &Embedder{m: testModel(b)}
	ctx := context.Background()
	tokens := 0
	for _, t := range benchTask {
		ids, _ := e.Tokenize(t)
		tokens += len(ids)
	}
	b.ReportAllocs()
	var lat []time.Duration
	cpu := startCPU(b)
	for b.Loop() {
		t0 := time.Now()
		if _, err := e.EmbedBatch(ctx, benchTask); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu.report()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(tokens), "tokens")
}
