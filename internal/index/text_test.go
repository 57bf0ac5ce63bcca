package index_test

import (
	"strings"
	"testing"

	"github.com/contextd/contextd/internal/index"
	"github.com/contextd/contextd/internal/resource"
)

func TestEmbeddingText(t *testing.T) {
	tests := []struct {
		name string
		d    resource.Descriptor
		want string
	}{
		{
			name: "description first, then title, then name words",
			d: resource.Descriptor{Name: "total_query_meta_search_engine", Title: "TotalQuery Search",
				Description: "Search 70 engines at once", URI: "x://a/b", MIMEType: "text/plain"},
			want: "Search 70 engines at once. TotalQuery Search. total query meta search engine",
		},
		{
			name: "name words the title already says are left out",
			d:    resource.Descriptor{Name: "getWeather", Title: "Get weather", Description: "Forecasts by city."},
			want: "Forecasts by city. Get weather",
		},
		{
			name: "URI words stand in for a missing description, last",
			d:    resource.Descriptor{Name: "readme", Title: "Project readme", URI: "file:///repo/docs/README.md"},
			want: "Project readme. readme. repo docs README md",
		},
		{
			name: "a field repeating another is said once",
			d:    resource.Descriptor{Name: "a", Title: "Notes", Description: "Notes"},
			want: "Notes. a",
		},
		{
			name: "sentence punctuation is kept, not doubled",
			d:    resource.Descriptor{Name: "n", Title: "T", Description: "Does things!"},
			want: "Does things! T. n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := index.EmbeddingText(tc.d); got != tc.want {
				t.Errorf("EmbeddingText = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLongDescriptionGoesLast(t *testing.T) {
	long := strings.Repeat("word ", index.LongDescriptionWords+1)
	got := index.EmbeddingText(resource.Descriptor{Name: "billing_report", Title: "Billing report", Description: long})
	if !strings.HasPrefix(got, "Billing report. ") {
		t.Fatalf("a %d-word description hides the title: %.60q", index.LongDescriptionWords+1, got)
	}
	short := strings.Repeat("word ", index.LongDescriptionWords)
	if got := index.EmbeddingText(resource.Descriptor{Title: "Billing report", Description: short}); strings.HasPrefix(got, "Billing") {
		t.Errorf("a %d-word description should still come first: %.60q", index.LongDescriptionWords, got)
	}
}

func TestLongUnspacedDescriptionGoesLast(t *testing.T) {
	long := strings.Repeat("検索", index.LongDescriptionWords)
	if got := index.EmbeddingText(resource.Descriptor{Title: "検索ツール", Description: long}); !strings.HasPrefix(got, "検索ツール. ") {
		t.Fatalf("a %d-character Japanese description hides the title: %.40q", 2*index.LongDescriptionWords, got)
	}
}
