package lexical_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/internal/lexical"
)

func TestClauses(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"what is the architecture of the server", nil},
		{"Give me the stock price of Apple and the latest news about it.",
			[]string{"Give me the stock price of Apple", "the latest news about it."}},
		{"Find flights to Paris, then book a hotel near the station; also check the weather there",
			[]string{"Find flights to Paris,", "book a hotel near the station;", "check the weather there"}},
		{"Please. Summarise the design doc and list its open questions",
			[]string{"Please. Summarise the design doc", "list its open questions"}},
		{"rock and roll", nil},                     // too short to split
		{"version 3.5 of the file.go parser", nil}, // dots inside words do not split
		{"读取配置文件。然后列出所有的服务器", []string{"读取配置文件。", "然后列出所有的服务器"}},
		{"", nil},
	} {
		if diff := cmp.Diff(tc.want, lexical.Clauses(tc.in)); diff != "" {
			t.Errorf("Clauses(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
