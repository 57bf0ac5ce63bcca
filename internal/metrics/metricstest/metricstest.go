// Package metricstest scrapes a Prometheus endpoint over HTTP for tests and
// gives its samples by name and labels.
package metricstest

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Samples maps a sample's key, `name{label="value",...}` with labels
// sorted (or the bare name without labels), to its value. A histogram gives
// NAME_count and NAME_sum.
type Samples map[string]float64

// Key returns the key of name with labels given as pairs: Key("x", "a", "1")
// is `x{a="1"}`.
func Key(name string, labels ...string) string {
	if len(labels) == 0 {
		return name
	}
	var ls []string
	for i := 0; i+1 < len(labels); i += 2 {
		ls = append(ls, fmt.Sprintf("%s=%q", labels[i], labels[i+1]))
	}
	slices.Sort(ls)
	return name + "{" + strings.Join(ls, ",") + "}"
}

// Scrape GETs url (the text exposition format) and parses it; any failure
// fails the test.
func Scrape(t testing.TB, url string) Samples {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape %s: parse: %v", url, err)
	}
	out := Samples{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName(), l.GetValue())
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[Key(name, labels...)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[Key(name, labels...)] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[Key(name, labels...)] = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[Key(name+"_count", labels...)] = float64(m.GetHistogram().GetSampleCount())
				out[Key(name+"_sum", labels...)] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}
