package answers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadAnswers(t *testing.T) {
	dir := t.TempDir()
	if err := convertFixture(t).Write(dir); err != nil {
		t.Fatal(err)
	}
	all, err := LoadAnswers(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 7 {
		t.Fatalf("%d answers, want 7", len(all))
	}
	want := Answer{ID: "a006", Split: all[5].Split, CorpusID: "npmdocs:commands/npm-ci.md", Kind: KindSimilar,
		Answers: []string{"cannot be added with this command", "Individual dependencies"}}
	if diff := cmp.Diff(want, all[5]); diff != "" {
		t.Errorf("a006 (-want +got):\n%s", diff)
	}
	n := 0
	for _, s := range []string{SplitTest, SplitDev} {
		got, err := LoadAnswers(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range got {
			if a.Split != s {
				t.Errorf("LoadAnswers(%s) returned %s of %s", s, a.ID, a.Split)
			}
		}
		n += len(got)
	}
	if n != 7 {
		t.Errorf("the splits hold %d answers, want 7", n)
	}

	a := all[5]
	for text, want := range map[string]bool{
		"… Individual dependencies …":                true,
		"they cannot be added with this command, so": true,
		"individual dependencies":                    false, // case matters
		"cannot be  added with this command":         false, // so does white space
		"":                                           false,
	} {
		if got := a.Found(text); got != want {
			t.Errorf("Found(%q) = %v, want %v", text, got, want)
		}
	}

	for _, c := range []struct{ name, file, want string }{
		{"not JSON", "{\n", "answers.jsonl:1:"},
		{"unknown field", `{"_id":"a1","split":"dev","answers":["x"],"corpus-id":"d","kind":"deep","x":1}`, `unknown field "x"`},
		{"two values", `{"_id":"a1","split":"dev","answers":["x"],"corpus-id":"d","kind":"deep"} {}`, "more than one JSON value"},
		{"no id", `{"split":"dev","answers":["x"],"corpus-id":"d","kind":"deep"}`, "empty _id or corpus-id"},
		{"bad split", `{"_id":"a1","split":"train","answers":["x"],"corpus-id":"d","kind":"deep"}`, `split "train"`},
		{"no answers", `{"_id":"a1","split":"dev","answers":[],"corpus-id":"d","kind":"deep"}`, "no answers"},
		{"empty answer", `{"_id":"a1","split":"dev","answers":["x",""],"corpus-id":"d","kind":"deep"}`, "an empty one"},
		{"duplicate", `{"_id":"a1","split":"dev","answers":["x"],"corpus-id":"d","kind":"deep"}` + "\n" +
			`{"_id":"a1","split":"test","answers":["y"],"corpus-id":"d","kind":"deep"}`, "answers.jsonl:2: a1 is on line 1 too"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := t.TempDir()
			if err := os.WriteFile(filepath.Join(d, AnswersFile), []byte(c.file+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadAnswers(d, "")
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := LoadAnswers(t.TempDir(), ""); err == nil {
		t.Error("LoadAnswers of a directory without answers.jsonl succeeded")
	}
}
