package answers

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/contextd/contextd/eval/beir"
)

func TestParseQuestions(t *testing.T) {
	good := `{"id":"a001","kind":"deep","doc":"d","question":"how long may a line be?","answers":["MaxScanTokenSize = 64 * 1024"]}`
	qs, err := ParseQuestions("q.jsonl", []byte("// comment\n\n# another\n"+good+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Question{ID: "a001", Kind: "deep", Doc: "d", Question: "how long may a line be?",
		Answers: []string{"MaxScanTokenSize = 64 * 1024"}, Line: 4}
	if diff := cmp.Diff([]*Question{want}, qs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	line := func(id, kind, near, question string, answers ...string) string {
		var q strings.Builder
		q.WriteString(`{"id":"` + id + `","kind":"` + kind + `","doc":"d",`)
		if near != "" {
			q.WriteString(`"near":["` + near + `"],`)
		}
		q.WriteString(`"question":"` + question + `","answers":[`)
		for i, a := range answers {
			if i > 0 {
				q.WriteString(",")
			}
			q.WriteString(`"` + a + `"`)
		}
		q.WriteString("]}")
		return q.String()
	}
	cases := []struct{ name, file, want string }{
		{"empty", "// nothing\n", "q.jsonl: no questions"},
		{"not JSON", "{id: 1}\n", "q.jsonl:1:"},
		{"unknown field", `{"id":"a001","kind":"deep","doc":"d","question":"q","answers":["abcdef"],"extra":1}`, `unknown field "extra"`},
		{"bad id", line("q1", "deep", "", "q", "abcdef"), `id "q1"`},
		{"bad kind", line("a001", "hard", "", "q", "abcdef"), `kind "hard"`},
		{"no doc", `{"id":"a001","kind":"deep","question":"q","answers":["abcdef"]}`, "no doc"},
		{"padded question", line("a001", "deep", "", " q", "abcdef"), "surrounding white space"},
		{"tab in question", line("a001", "deep", "", `a\tb`, "abcdef"), "tab or newline"},
		{"similar without near", line("a001", "similar", "", "q", "abcdef"), "near"},
		{"no answers", line("a001", "deep", "", "q"), "no answers"},
		{"short answer", line("a001", "deep", "", "q", "abcd"), "is 4 bytes"},
		{"long answer", line("a001", "deep", "", "q", strings.Repeat("x", 61)), "is 61 bytes"},
		{"answer in question", line("a001", "deep", "", "what is --omit=dev for?", "--omit=dev"), "contains its answer"},
		{"reworded shares a word", line("a001", "reworded", "", "how long may a Token be?", "MaxScanTokenSize = 64 * token"), `shares ["token"]`},
		{"duplicate id", line("a001", "deep", "", "q1", "abcdef") + "\n" + line("a001", "deep", "", "q2", "abcdef"), "id a001 is used on line 1 too"},
		{"duplicate question", line("a001", "deep", "", "q", "abcdef") + "\n" + line("a002", "deep", "", "q", "abcdef"), "repeats line 1"},
		{"invalid UTF-8", "\xff\n", "invalid UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseQuestions("q.jsonl", []byte(c.file))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestSharedWords(t *testing.T) {
	for _, c := range []struct {
		q    string
		a    []string
		want []string
	}{
		{"how long can a line get?", []string{"MaxScanTokenSize = 64 * 1024"}, nil},
		// Case-insensitive, whole words of four or more letters.
		{"What is the LINE limit?", []string{"max line length", "line"}, []string{"line"}},
		{"a run-time panic", []string{"causes a run-time panic"}, []string{"time", "panic"}},
		// Stop words and short words do not count.
		{"what does it do with that?", []string{"that is what it does with"}, nil},
		// Identifiers are one word: the question's "token" is not "tokensize".
		{"how big can a token be?", []string{"maxTokenSize"}, nil},
	} {
		if diff := cmp.Diff(c.want, sharedWords(c.q, c.a)); diff != "" {
			t.Errorf("sharedWords(%q, %q) (-want +got):\n%s", c.q, c.a, diff)
		}
	}
}

func TestCheck(t *testing.T) {
	corpus := []beir.Doc{
		{ID: "big", Server: "s1", Content: strings.Repeat("x", DeepOffset) + "DEEP ANSWER" + strings.Repeat("y", DeepMinSize)},
		{ID: "small", Server: "s2", Content: "SHALLOW ANSWER and SHARED TEXT"},
		{ID: "other", Server: "s2", Content: "SHARED TEXT and other words"},
	}
	q := func(id, kind, doc string, answers ...string) *Question {
		return &Question{ID: id, Kind: kind, Doc: doc, Answers: answers, Question: "q", Line: 1}
	}
	ok := []*Question{
		q("a001", KindDeep, "big", "DEEP ANSWER"),
		q("a002", KindReworded, "small", "SHALLOW ANSWER", "and SHARED"),
		{ID: "a003", Kind: KindSimilar, Doc: "small", Near: []string{"other"}, Answers: []string{"SHALLOW"}, Line: 3},
	}
	located, err := Check("q.jsonl", ok, corpus)
	if err != nil {
		t.Fatal(err)
	}
	if got := located[0]; got.Server != "s1" || got.Size != len(corpus[0].Content) || got.Offsets[0] != DeepOffset {
		t.Errorf("a001 located %+v", got)
	}
	if diff := cmp.Diff([]int{0, 15}, located[1].Offsets); diff != "" {
		t.Errorf("a002 offsets (-want +got):\n%s", diff)
	}

	bad := []*Question{
		q("a010", KindReworded, "missing", "SHALLOW"),
		q("a011", KindReworded, "small", "NOT THERE"),
		q("a012", KindReworded, "small", "SHARED TEXT"),
		q("a013", KindReworded, "big", "SHALLOW"),
		q("a014", KindDeep, "small", "SHALLOW"),
		q("a015", KindDeep, "big", "xxxxxDEEP"),
		{ID: "a016", Kind: KindSimilar, Doc: "small", Near: []string{"small", "nope"}, Answers: []string{"SHALLOW"}, Line: 9},
	}
	_, err = Check("q.jsonl", bad, corpus)
	if err == nil {
		t.Fatal("Check accepted bad questions")
	}
	for _, want := range []string{
		`q.jsonl:1: question a010: doc "missing" is not in the corpus`,
		`question a011: answer "NOT THERE" occurs in no document`,
		`question a012: answer "SHARED TEXT" occurs in 2 documents: small other`,
		`question a013: answer "SHALLOW" occurs in small, not in doc big`,
		`question a014: deep, yet answer "SHALLOW" is at byte 0 of a 30-byte document`,
		`question a015: deep, yet answer "xxxxxDEEP" is at byte 16379`,
		`q.jsonl:9: question a016: near "small" is not another document`,
		`question a016: near "nope" is not another document`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 8 {
		t.Errorf("%d problems reported, want 8:\n%v", n, err)
	}
}
