package report

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/contextd/contextd/eval/metrics"
)

// Chart size.
const (
	chartWidth  = 7 * vg.Inch
	chartHeight = 4.5 * vg.Inch
)

// WriteChart draws recall@k for k = 1…20, one line (with point markers) per
// strategy, with a legend and labelled axes, and writes it in format "svg"
// or "png". The chart is drawn with gonum.org/v1/plot; SVG text refers to
// the Liberation fonts by name and does not embed them.
func WriteChart(w io.Writer, r *Results, format string) error {
	if err := r.check(); err != nil {
		return err
	}
	if format != "svg" && format != "png" {
		return fmt.Errorf("report: chart format %q: want svg or png", format)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Recall@k: %s / %s (%d queries)", r.Dataset, r.Split, r.Queries)
	p.X.Label.Text = "k (documents considered)"
	p.Y.Label.Text = "recall@k"
	p.X.Min, p.X.Max = 1, metrics.CurveDepth
	p.Y.Min, p.Y.Max = 0, 1
	var ticks []plot.Tick
	for k := 1; k <= metrics.CurveDepth; k++ {
		t := plot.Tick{Value: float64(k)}
		if k == 1 || k%5 == 0 {
			t.Label = fmt.Sprint(k)
		}
		ticks = append(ticks, t)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	ticks = nil
	for i := 0; i <= 10; i++ {
		t := plot.Tick{Value: float64(i) / 10}
		if i%2 == 0 {
			t.Label = fmt.Sprintf("%.1f", t.Value)
		}
		ticks = append(ticks, t)
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = false
	p.Legend.XOffs = -vg.Millimeter * 2
	p.Legend.YOffs = vg.Millimeter * 2

	for i, s := range r.Strategies {
		xys := make(plotter.XYs, metrics.CurveDepth)
		for k := range xys {
			xys[k] = plotter.XY{X: float64(k + 1), Y: s.Summary.Mean.RecallCurve[k]}
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("report: chart of %q: %w", s.Name, err)
		}
		line.Color = plotutil.Color(i)
		line.Dashes = plotutil.Dashes(i)
		line.Width = vg.Points(1.5)
		points.Color = plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
	}
	wt, err := p.WriterTo(chartWidth, chartHeight, format)
	if err != nil {
		return fmt.Errorf("report: chart: %w", err)
	}
	if _, err := wt.WriteTo(w); err != nil {
		return fmt.Errorf("report: chart: %w", err)
	}
	return nil
}
