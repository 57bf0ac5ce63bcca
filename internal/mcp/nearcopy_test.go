package mcp

import (
	"bytes"
	"cmp"
	"fmt"
	"go/build"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/contextd/contextd/internal/resource"
)

// A text rewritten the ways a bridge passing it back rewrites it holds
// every hash of its sketch; another page, one made from the same
// template, or half of it does not.
func TestNearCopiesAreTextsRewrittenNotTemplated(t *testing.T) {
	const page = "# Page 7\n\nThis page explains postgres vacuum tuning in depth, part 7.\nIt covers the configuration knobs, the monitoring queries\nand the operational runbook steps that an engineer follows.\n"
	long := strings.Repeat("Autovacuum workers wake every minute and vacuum tables whose dead tuples passed the threshold.\n", 3) +
		"The cost limit bounds the I/O they spend; raise it on fast disks, lower it on shared ones.\n" +
		strings.Repeat("Index bloat grows when updates touch indexed columns; reindex concurrently to win the space back.\n", 3)
	// Of a script whose letters fold to Latin look-alikes (а, е, о, р, с).
	const ru = "# Страница 7\n\nЭта страница подробно объясняет настройку очистки postgres, часть 7.\nОна описывает параметры конфигурации, запросы мониторинга\nи шаги регламента, которым следует инженер.\n"
	text := func(s string) []resource.Content { return []resource.Content{{Text: s}} }
	for _, c := range []struct {
		name string
		from string
		got  []resource.Content
		near bool
	}{
		{"as it was", page, text(page), true},
		{"every line quoted", page, text("> " + strings.ReplaceAll(page, "\n", "\n> ")), true},
		{"lines in CRLF", page, text(strings.ReplaceAll(page, "\n", "\r\n")), true},
		{"front matter", page, text("---\nsource: hub\nvia: bridge\n---\n" + page), true},
		{"a line within a word", page, text(page[:60] + "\n[hub 1764864000]\n" + page[60:]), true},
		{"a line within", page, text(strings.Replace(page, "\n", "\n<!-- read 1764864000 -->\n", 3)), true},
		{"words before the first line", page, text("read-id 1764864000 " + page), true},
		{"a line at the end", page, text(page + "<!-- read 1764864000 -->"), true},
		{"split into two items", page, []resource.Content{{Text: page[:77]}, {Text: page[77:]}}, true},
		{"within a longer text", page, text(long + page + long), true},
		{"a long text quoted", long, text("> " + strings.ReplaceAll(long, "\n", "\n> ")), true},
		{"a word within each line", page, text(strings.ReplaceAll(page, " the ", " the [1764864000] ")), true},
		{"two words within a line", page, text(strings.Replace(page, "in depth", "in [hub 1764864000] depth", 1)), true},
		// A word replaced in a line reads as a template's slot filled
		// otherwise: not told, stamped or not.
		{"a word of every line replaced", page, text(wordline(page, 1, 1)), false},
		{"a word of every line replaced by two", page, text(wordline(page, 2, 1)), false},
		{"a word replaced in two lines only", long, text(strings.Replace(strings.Replace(long, "cost limit bounds", "cost cap bounds", 1), "Index bloat grows", "Index size grows", -1)), false},
		{"a word replaced in three lines, a word each", long, text(strings.Replace(strings.Replace(strings.Replace(long, "cost limit bounds", "cost cap bounds", 1), "Index bloat grows", "Index size grows", -1), "workers wake every", "workers run every", -1)), false},
		{"a word of every long line replaced", long, text(wordline(long, 1, 1)), false},
		{"a zero-width space after every third letter", page, text(sprinkle(page, "\u200b", 3)), true},
		{"a soft hyphen after every second letter", long, text(sprinkle(long, "\u00ad", 2)), true},
		{"zero-width joiners and combining marks", page, text(sprinkle(sprinkle(page, "\u200d", 4), "\u0301", 5)), true},
		{"a zero-width space within every word, quoted", long, text("> " + strings.ReplaceAll(sprinkle(long, "\u200b", 2), "\n", "\n> ")), true},
		{"Cyrillic look-alikes for Latin letters", page, text(strings.NewReplacer("a", "а", "e", "е", "o", "о", "c", "с", "p", "р").Replace(page)), true},
		{"fullwidth letters", page, text(strings.NewReplacer("t", "ｔ", "n", "ｎ", "s", "ｓ").Replace(page)), true},
		{"look-alikes in a long text, quoted", long, text("> " + strings.ReplaceAll(strings.NewReplacer("a", "а", "o", "о").Replace(long), "\n", "\n> ")), true},
		{"a Russian page as it was", ru, text(ru), true},
		{"a Russian page, a word changed", ru, text(strings.Replace(ru, "очистки", "анализа", 1)), false},
		{"a Russian page, another part", ru, text(strings.ReplaceAll(ru, "7", "8")), false},
		{"a record of the same form", record(1), text(record(2)), false},
		{"code made for another type", typed("AuthenticationOk"), text(typed("AuthenticationSASL")), false},
		{"a word changed", page, text(strings.Replace(page, "vacuum tuning", "vacuum sizing", 1)), false},
		{"another part", page, text(strings.ReplaceAll(page, "7", "8")), false},
		{"the same template, another subject", page, text(strings.Replace(page, "postgres vacuum tuning", "kafka consumer rebalancing", 1)), false},
		{"half of it", long, text(long[:len(long)/2]), false},
		{"another page", page, text(long), false},
		{"an image", page, []resource.Content{{IsBlob: true, Blob: []byte(page)}}, false},
	} {
		sketch := sketchOf(readable(text(c.from)))
		if len(sketch) < nearMinSketch {
			t.Fatalf("%s: a sketch of %d hashes; want %d or more", c.name, len(sketch), nearMinSketch)
		}
		if got := holdsSketch(shingleSet(readable(c.got)), sketch); got != c.near {
			t.Errorf("%s: near copy %v; want %v", c.name, got, c.near)
		}
	}
	// A text of too few words has no sketch: any two are alike.
	if s := sketchOf(text("vacuum the tables\nreindex the indexes\n")); s != nil {
		t.Errorf("a sketch of %d hashes of 6 words; want none", len(s))
	}
}

// sprinkle returns text with mark put after every nth letter or digit of
// each word, as a bridge hiding what it passes back does: the text reads
// the same.
func sprinkle(text, mark string, n int) string { return sprinkleIn(text, mark, n, false) }

// sprinkleWithin is sprinkle within words only: not after a word's last
// letter.
func sprinkleWithin(text, mark string, n int) string { return sprinkleIn(text, mark, n, true) }

func sprinkleIn(text, mark string, n int, within bool) string {
	word := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	var b strings.Builder
	rs := []rune(text)
	run := 0
	for i, r := range rs {
		b.WriteRune(r)
		if !word(r) {
			run = 0
			continue
		}
		if run++; run%n == 0 && (!within || i+1 < len(rs) && word(rs[i+1])) {
			b.WriteString(mark)
		}
	}
	return b.String()
}

// sprinkleText is sprinkle, leaving what stands within "<" and ">" as it
// is: the words, not the markup.
func sprinkleText(text, mark string, n int) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(text, '<')
		j := strings.IndexByte(text[max(i, 0):], '>')
		if i < 0 || j < 0 {
			b.WriteString(sprinkle(text, mark, n))
			return b.String()
		}
		b.WriteString(sprinkle(text[:i], mark, n))
		b.WriteString(text[i : i+j+1])
		text = text[i+j+1:]
	}
}

// navPage returns a page of links, each titled title.
func navPage(title string, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "<p><a href=\"/docs/%d\" title=%q>%s</a></p>\n", len(n), title, n)
	}
	return b.String()
}

// linkSplit returns text with each word of four letters or more split
// by a Markdown link around its second letter ("v[a](#xv)cuum").
func linkSplit(text string) string {
	var b strings.Builder
	for _, w := range strings.SplitAfter(text, " ") {
		if len(w) >= 4 && unicode.IsLetter(rune(w[0])) {
			w = w[:1] + "[" + w[1:2] + "](#x" + w[:1] + ")" + w[2:]
		}
		b.WriteString(w)
	}
	return b.String()
}

// rewriteLetters returns text with the first n letters of each word
// written as f has them.
func rewriteLetters(text string, n int, f func(rune) string) string {
	var b strings.Builder
	run := 0
	for _, r := range text {
		if !unicode.IsLetter(r) {
			run = 0
			b.WriteRune(r)
			continue
		}
		if run++; run <= n {
			b.WriteString(f(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Markup is taken as it shows: comments and tags dropped, references
// decoded; a reference to "<" is no tag.
func TestUnmarked(t *testing.T) {
	for in, want := range map[string]string{
		"vac<b></b>uum tuning":          "vacuum tuning",
		"a <b>bold</b> word":            "a bold word",
		"x &#97;&#x62; y &amp; z":       "x ab y & z",
		"vac<!---->uum <!-- a note -->": "vacuum ",
		"&lt;!----&gt; &lt;b&gt;":       "<!----> <b>",
		"an <!-- unclosed comment":      "an <!-- unclosed comment",
		"a < b\n> c":                    "a < b\n> c",
		"Map<String, List<Integer>> m":  "Map<String, List<Integer>> m",
		"<Callout variant=\"info\" />":  "<Callout variant=\"info\" />",
		"<SPAN class=\"x\">ab</Span>c":  "abc",
		"plain text":                    "plain text",
		"vac<span hidden>zq</span>uum":  "vaczquum",
		"<b\nclass=\"x\">bold</b>":      "<b\nclass=\"x\">bold",
		"va<b\nclass=\"x\">cu</b>um":    "vacuum",
		`<a href="https://docs.example.com/en-us/v1/reference/storage/overview">Overview</a>`: `<a href="https://docs.example.com/en-us/v1/reference/storage/overview">Overview`,
		`<i title="a>b">x</i>`:              "x",
		"vac<!--->uum <!-->x":               "vacuum x",
		"a <!-- x ---> b <!-- a -- b --> c": "a  b  c",
		"a <!-- note --!> b":                "a  b",
		// Shown: aria-hidden hides from screen readers only.
		`<span aria-hidden="true">shown</span>`:       "shown",
		`<span style="font-size: 0.9em">shown</span>`: "shown",
		`<SPAN STYLE="Display: None">tab</span>shown`: "tabshown",
		"<span hidden>never closed":                   "never closed",
		"a <b and c> d; x <b\ny":                      "a  d; x <b\ny",
		`<a title="Show hidden files">shown</a>`:      "shown",
		`<span data-css="display:none">shown</span>`:  "shown",
		"<span hidden><span>zq</span>zz</span>shown":  "zqzzshown",
		"<div hidden>panel</div>shown":                "<div hidden>panel</div>shown",
		"<template><b>it</b></template>shown":         "<template>it</template>shown",
		`<i style="opacity: 0.5">shown</i>`:           "shown",
		"List<? extends Number> <!DOCTYPE html>":      "List<? extends Number> <!DOCTYPE html>",
		"Map<String, hidden> m":                       "Map<String, hidden> m",
	} {
		if got := unmarked(in); got != want {
			t.Errorf("unmarked(%q) = %q; want %q", in, got, want)
		}
	}
}

// Markdown's marks next to words are taken as they show: dropped.
func TestUnemphasized(t *testing.T) {
	for in, want := range map[string]string{
		"va**cu**um tuning":                    "vacuum tuning",
		"*vacuum* and __bold__":                "*vacuum* and __bold__",
		"* an item\n- another":                 "* an item\n- another",
		"a * b":                                "a * b",
		"v[a](#x)cuum":                         "vacuum",
		"[va](#x)cuum":                         "[vacuum",
		"see [the docs](https://x.y/z) now":    "see [the docs](https://x.y/z) now",
		"to[p](#)s and u[p]()s":                "tops and ups",
		"x](not a link":                        "x](not a link",
		"snake_case and \\_escaped\\_":         "snake_case and \\_escaped\\_",
		"a\\*\\*b":                             "a\\*\\*b", // escaped stars show
		"_emphasis_ and ENV_VARS and ~~done~~": "_emphasis_ and ENV_VARS and ~~done~~",
		`\alpha and a\.b`:                      `\alpha and a\.b`,
		"plain text":                           "plain text",
	} {
		if got := unemphasized(in); got != want {
			t.Errorf("unemphasized(%q) = %q; want %q", in, got, want)
		}
	}
}

// wordline returns text with the middle word of every line (the one
// after it if salt is over 2) replaced by n words of a nonce, as a bridge
// stamping each read does.
func wordline(text string, n, salt int) string {
	var b strings.Builder
	for i, line := range strings.SplitAfter(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			b.WriteString(line)
			continue
		}
		at := len(fields) / 2
		if salt > 2 {
			at = (at + 1) % len(fields)
		}
		nonce := make([]string, n)
		for j := range nonce {
			nonce[j] = fmt.Sprintf("n%x", (i+1)*7919+j*104729+salt*15485863)
		}
		fields = slices.Replace(fields, at, at+1, nonce...)
		b.WriteString(strings.Join(fields, " ") + "\n")
	}
	return b.String()
}

// typed returns code made from one template for the type name.
func typed(name string) string {
	return strings.NewReplacer("T", name).Replace(`// T is a message of the PostgreSQL wire protocol.
type T struct{}

// Backend identifies this message as sendable by the PostgreSQL backend.
func (*T) Backend() {}

// Decode decodes src into dst. src must contain the complete message
// with the exception of the initial 1 byte message type identifier.
func (dst *T) Decode(src []byte) error {
	if len(src) != 4 {
		return errors.New("bad T length")
	}
	*dst = T{}
	return nil
}
`)
}

// record returns a record page: a name and a value to a line.
func record(i int) string {
	var b strings.Builder
	for j, k := range []string{"id", "name", "owner", "status", "region", "tier", "created", "updated"} {
		fmt.Fprintf(&b, "%s: value%d\n", k, i*100+j)
	}
	return b.String()
}

// ServedBack finds a rewritten copy of a read the MCP server answered,
// another server's first, and says it is near.
func TestServedBackFindsRewrittenCopies(t *testing.T) {
	const page = "This page explains postgres vacuum tuning in depth.\nIt covers the configuration knobs, the monitoring queries\nand the operational runbook steps that an engineer follows.\n"
	s := &ServedLists{}
	own := resource.Key{Server: "hub", URI: "hub://own/1"}
	docs := resource.Key{Server: "docs", URI: "doc://1"}
	s.NoteRead(own, []resource.Content{{Text: page}})
	s.NoteRead(docs, []resource.Content{{Text: page}})
	k := resource.Key{Server: "hub", URI: "hub://up/1"}
	if c := s.ServedBack(k, []resource.Content{{Text: page}}); c.Near || len(c.Of) != 2 || c.Of[0] != docs || !c.Other("hub") {
		t.Errorf("the text as read: %+v; want a copy of docs first, then hub's own", c)
	}
	quoted := "> " + strings.ReplaceAll(page, "\n", "\n> ")
	if c := s.ServedBack(k, []resource.Content{{Text: quoted}}); !c.Near || len(c.Of) != 2 || c.Of[0] != docs {
		t.Errorf("quoted: %+v; want a near copy of docs first", c)
	}
	// What is drawn as nothing, sprinkled within its words, leaves the
	// text the same: an exact copy.
	if c := s.ServedBack(k, []resource.Content{{Text: sprinkle(page, "\u200b", 3)}}); c.Near || len(c.Of) != 2 || c.Of[0] != docs || !c.Equal {
		t.Errorf("zero-width spaces within its words: %+v; want an equal copy of docs first", c)
	}
	// Rewrites that leave the text reading the same, one level deeper
	// each time (a bridge's copy of its copy differs from both): each is
	// the same copy.
	cyrillic := map[rune]string{'a': "а", 'e': "е", 'o': "о", 'c': "с", 'p': "р", 'x': "х", 'y': "у"}
	for name, text := range map[string]string{
		"Cyrillic look-alikes for Latin letters":  strings.NewReplacer("a", "а", "e", "е", "o", "о").Replace(page),
		"Cyrillic look-alikes, two a word":        rewriteLetters(page, 2, func(r rune) string { return cmp.Or(cyrillic[r], string(r)) }),
		"fullwidth letters, three a word":         rewriteLetters(page, 3, func(r rune) string { return string(r + 0xfee0) }),
		"letters as character references":         rewriteLetters(page, 2, func(r rune) string { return "&#" + strconv.Itoa(int(r)) + ";" }),
		"an empty comment within every word":      sprinkle(page, "<!---->", 3),
		"empty tags within every word":            sprinkle(page, "<b></b>", 3),
		"Hangul fillers within every word":        sprinkle(page, "\u3164", 3),
		"accents as combining marks":              strings.ReplaceAll(page, "e", "e\u0301"),
		"inline tags within every word":           sprinkle(page, "<span></span>", 2),
		"zero-width spaces, then a reference too": rewriteLetters(sprinkle(page, "\u200b", 2), 1, func(r rune) string { return "&#x" + strconv.FormatInt(int64(r), 16) + ";" }),
		"long tags within every word":             sprinkleWithin(page, `<span class="c-a0f3 c-b19e c-77d2 c-e5c1 c-0d4a c-91bb c-3f0e c-5a2d c-e0e0 c-1b7f">`+"</span>", 3),
		"tags broken over lines":                  sprinkleWithin(page, "<b\n></b\n>", 3),
		"tags whose attributes hold > and <":      sprinkleWithin(page, `<i title="a>b" data-x='<c'></i>`, 3),
		"abrupt comments":                         sprinkle(page, "<!--->", 3),
		"bang-closed comments":                    sprinkle(page, "<!-- x --!>", 2),
		"Markdown emphasis within every word":     sprinkleWithin(page, "**", 2),
		"code marks within every word":            sprinkleWithin(page, "``", 2),
		"strikethrough marks within every word":   sprinkleWithin(page, "~~", 3),
		"empty MDX expressions":                   sprinkleWithin(page, "{}", 3),
		"every word a link split in two":          linkSplit(page),
		"tags parted by a form feed":              sprinkle(page, "<SPAN\f></span>", 3),
		"nobr tags":                               sprinkle(page, "<nobr></nobr>", 3),
		"label tags":                              sprinkle(page, "<label></label>", 2),
	} {
		if c := s.ServedBack(k, []resource.Content{{Text: text}}); len(c.Of) != 2 || c.Of[0] != docs || !c.Equal {
			t.Errorf("%s: %+v; want an equal copy of docs first", name, c)
		}
	}
	// Code from one template, alike but for its type parameters, and
	// pages alike but for a component's props, are not copies of each
	// other: only inline HTML elements' tags are dropped.
	for name, pair := range map[string][2]string{
		"type parameters": {
			"public final class Repository {\n    private final Map<String, List<Integer>> byName = new HashMap<>();\n    public List<Integer> find(String name) { return byName.get(name); }\n}\n",
			"public final class Repository {\n    private final Map<String, List<Order>> byName = new HashMap<>();\n    public List<Order> find(String name) { return byName.get(name); }\n}\n",
		},
		// Tone marks make other words in Thai (ไม่ "not", ไม้ "wood").
		"Thai tone marks": {
			"ไม่ ต้อง ปิด เครื่อง ก่อน อัปเกรด ระบบ\nให้ หยุด งาน ทั้งหมด แล้ว ค่อย เริ่ม ใหม่\nตรวจ สอบ บันทึก ทุก ครั้ง หลัง อัปเกรด\n",
			"ไม้ ต้อง ปิด เครื่อง ก้อน อัปเกรด ระบบ\nให้ หยุด งาน ทั้งหมด แล้ว ค้อย เริ่ม ใหม้\nตรวจ สอบ บันทึก ทุก ครั้ง หลัง อัปเกรด\n",
		},
		// An attribute's value naming what hides is no hiding.
		"links whose titles say hidden": {
			navPage("Show hidden files in the tree", "Vacuum tables whose dead tuples passed the threshold", "Analyze statistics after a bulk load of rows", "Reindex concurrently without blocking writers"),
			navPage("Show hidden files in the tree", "Back up the cluster with a base backup nightly", "Restore a single schema from a dump file", "Promote a replica when the primary fails over"),
		},
		"styles quoted in data attributes": {
			`<p><code data-css="display: none">vacuum analyze reindex cluster tables nightly</code></p>` + "\n",
			`<p><code data-css="display: none">backup restore replica failover drills weekly</code></p>` + "\n",
		},
		// What a hidden element holds shows in time: a tab's panel, an
		// accordion's body, a Vue component's template.
		"hidden tab panels": {
			"<div class=\"tabs\">Install on your platform</div>\n<div hidden>Run the installer and follow the wizard to the end.\nReboot once the drivers are in place.</div>\n",
			"<div class=\"tabs\">Install on your platform</div>\n<div hidden>Unpack the tarball into opt and add its bin folder to PATH.\nSource the profile again to pick it up.</div>\n",
		},
		"Vue templates": {
			"<template>\n  <ul class=\"orders\"><li v-for=\"o in orders\">{{ o.total }} paid by card</li></ul>\n</template>\n<script>export default { props: ['orders'] }</script>\n",
			"<template>\n  <table class=\"orders\"><tr v-for=\"o in orders\"><td>{{ o.customer }} owes a refund</td></tr></table>\n</template>\n<script>export default { props: ['orders'] }</script>\n",
		},
		"Java wildcards": {
			"static double sum(List<? extends Number> xs) { return xs.stream().mapToDouble(Number::doubleValue).sum(); }\n",
			"static void fill(List<? super Integer> xs) { for (int i = 0; i < 10; i++) xs.add(i); }\n",
		},
		"download links": {
			"Get the release: [download](https://example.com/v1.4.2/tool-linux-amd64.tar.gz) and check its sum.\n",
			"Get the release: [download](https://example.com/v2.0.0/tool-darwin-arm64.tar.gz) and check its sum.\n",
		},
		// Two SDKs' examples: an underscore within a word is no emphasis.
		"snake_case and camelCase names": {
			"client.list_items(page_size=10, order_by=name)\nclient.get_item(item_id=42, with_tags=true)\nclient.delete_item(item_id=42, dry_run=false)\n",
			"client.listItems(pageSize=10, orderBy=name)\nclient.getItem(itemId=42, withTags=true)\nclient.deleteItem(itemId=42, dryRun=false)\n",
		},
		"component props": {
			"# Upgrading\n\n<Callout variant=\"warning\" id=\"c3\" />\n\nStop the workers before you upgrade the schema, then start them again.\n",
			"# Upgrading\n\n<Callout variant=\"info\" id=\"c4\" />\n\nStop the workers before you upgrade the schema, then start them again.\n",
		},
	} {
		t2 := &ServedLists{}
		t2.NoteRead(docs, []resource.Content{{Text: pair[0]}})
		if c := t2.ServedBack(k, []resource.Content{{Text: pair[1]}}); len(c.Of) != 0 {
			t.Errorf("pages alike but for their %s: %+v; want no copy", name, c)
		}
		if c := t2.ServedBack(k, []resource.Content{{Text: sprinkleText(pair[0], "\u200b", 2)}}); !c.Equal {
			t.Errorf("the first of the pages alike but for their %s, zero-width spaces within its words: %+v; want an equal copy", name, c)
		}
	}
	// The resource read itself is no copy of its own read: of docs' if
	// docs was answered with the text first, and of nothing if it was.
	if c := s.ServedBack(own, []resource.Content{{Text: page}}); len(c.Of) != 0 {
		t.Errorf("the resource read itself, answered with the text before docs: %+v; want no copy", c)
	}
	later := &ServedLists{}
	later.NoteRead(docs, []resource.Content{{Text: page}})
	later.NoteRead(own, []resource.Content{{Text: page}})
	if c := later.ServedBack(own, []resource.Content{{Text: page}}); len(c.Of) != 1 || c.Of[0] != docs {
		t.Errorf("the resource read itself, answered with the text after docs: %+v; want a copy of docs only", c)
	}
	if c := s.ServedBack(k, []resource.Content{{Text: strings.Replace(page, "vacuum", "analyze", 1)}}); len(c.Of) != 0 {
		t.Errorf("a word changed: %+v; want no copy", c)
	}
}

// The cost of telling copies, per read: what the MCP server notes of a
// read it answers (digest and sketch), and what a mirrored read is
// compared with (all 4,096 remembered reads), for a page of 4 KiB and
// one of 900 KiB.
func BenchmarkServedCopies(b *testing.B) {
	para := "Autovacuum workers wake every minute and vacuum tables whose dead tuples passed the threshold; the cost limit bounds the I/O they spend.\n"
	typeset := "Autovacuum workers wake every minute — and vacuum tables whose “dead” tuples passed the threshold; the cost limit bounds the I/O they’ll spend…\n"
	for _, size := range []int{4 << 10, 900 << 10} {
		text := strings.Repeat(para, size/len(para))
		// Typeset: dashes, curly quotes, an ellipsis (not plain ASCII).
		b.Run("served-back-typeset/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			s := &ServedLists{}
			for i := range maxServedReads {
				s.NoteRead(resource.Key{Server: "docs", URI: "doc://" + strconv.Itoa(i)}, []resource.Content{{Text: strconv.Itoa(i) + " " + typeset + typeset}})
			}
			text := strings.Repeat(typeset, size/len(typeset))
			k := resource.Key{Server: "hub", URI: "hub://1"}
			for b.Loop() {
				s.ServedBack(k, []resource.Content{{Text: "> " + text}})
			}
		})
		s := &ServedLists{}
		for i := range maxServedReads {
			s.NoteRead(resource.Key{Server: "docs", URI: "doc://" + strconv.Itoa(i)}, []resource.Content{{Text: strconv.Itoa(i) + " " + para + para}})
		}
		// What costs markup the most: tags that open a quote and never
		// close, hidden spans that never end, links and marks in words.
		for name, unit := range map[string]string{
			"open-quotes":  `<b "`,
			"hidden-spans": `<s hidden>x`,
			"marks":        "a*[b](c)_",
			"tag-runs":     "<b\n>",
			"comments":     "<!--x-->",
		} {
			b.Run("served-back-"+name+"/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
				text := strings.Repeat(unit, size/len(unit))
				k := resource.Key{Server: "hub", URI: "hub://1"}
				for b.Loop() {
					s.ServedBack(k, []resource.Content{{Text: text}})
				}
			})
		}
		b.Run("note/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			for b.Loop() {
				s.NoteRead(resource.Key{Server: "docs", URI: "doc://x"}, []resource.Content{{Text: text}})
			}
		})
		b.Run("served-back/"+strconv.Itoa(size>>10)+"KiB", func(b *testing.B) {
			k := resource.Key{Server: "hub", URI: "hub://1"}
			for b.Loop() {
				s.ServedBack(k, []resource.Content{{Text: "> " + text}})
			}
		})
	}
}

// A sketch is kept for each of thousands of reads: it must hold its 32
// hashes, not the array of all the text's shingles it was cut from (1.1 GB
// for a host reading 900 KiB pages, +731 MB of live heap for 5,120 reads
// of 256 KiB).
func TestASketchHoldsOnlyItsHashes(t *testing.T) {
	var s ServedLists
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const reads = 200
	for i := range reads {
		var b strings.Builder
		for j := 0; b.Len() < 64<<10; j++ {
			fmt.Fprintf(&b, "w%dx%d ", i, j)
			if j%12 == 11 {
				b.WriteString("\n")
			}
		}
		s.NoteRead(resource.Key{Server: "big", URI: strconv.Itoa(i)}, []resource.Content{{Text: b.String()}})
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	// Each of 64 KiB holds about 9,000 shingles: 72 KB of hashes.
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Errorf("%d reads remembered hold %d KB of live heap; want a few hundred", reads, grown>>10)
	}
	runtime.KeepAlive(&s)
}

// A log page holding the page before it is a near copy of that page, and
// of every copy of it others passed back, which contextd served: however
// many of those match first, ServedBack says its own page matched too,
// and which.
func TestServedBackSaysAnOwnPageMatched(t *testing.T) {
	var s ServedLists
	var lines []string
	for i := range 12 {
		lines = append(lines, fmt.Sprintf("12:%02d entry %d: vacuum worker %d finished table t%d, removed %d dead tuples\n", i, i, i%4, i, i*97))
	}
	before := strings.Join(lines, "")
	for i := range 10 { // a bridge's copies, served before the log's page
		s.NoteRead(resource.Key{Server: "hub", URI: "hub://up/" + strconv.Itoa(i)}, []resource.Content{{Text: before}})
	}
	s.NoteRead(resource.Key{Server: "log", URI: "log://day/11"}, []resource.Content{{Text: before}})
	next := before
	for i := 12; i < 17; i++ {
		next += fmt.Sprintf("12:%02d entry %d: vacuum worker %d finished table t%d, removed %d dead tuples\n", i, i, i%4, i, i*97)
	}
	c := s.ServedBack(resource.Key{Server: "log", URI: "log://day/12"}, []resource.Content{{Text: next}})
	if !c.Near || !c.Own || !c.Other("log") || !slices.Contains(c.Of, resource.Key{Server: "log", URI: "log://day/11"}) {
		t.Errorf("ServedBack = %+v; want a near copy of the hub's and of the log's own page, that one among them", c)
	}
}

// A page holding the page before it and a line more matches it as a copy
// with a line added, not as a whole; the page itself read again elsewhere
// matches as a whole.
func TestServedBackSaysWhetherACopyIsWhole(t *testing.T) {
	var s ServedLists
	before := strings.Repeat("12:00 vacuum worker finished table t1, removed 97 dead tuples\n", 3)
	s.NoteRead(resource.Key{Server: "log", URI: "log://day/1"}, []resource.Content{{Text: before}})
	next := before + "12:05 vacuum worker finished table t2, removed 194 dead tuples\n"
	if c := s.ServedBack(resource.Key{Server: "log", URI: "log://day/2"}, []resource.Content{{Text: next}}); len(c.Of) != 1 || !c.Own || c.Equal || c.Near {
		t.Errorf("a page with a line added: ServedBack = %+v; want its own page, not equal", c)
	}
	if c := s.ServedBack(resource.Key{Server: "hub", URI: "hub://up/1"}, []resource.Content{{Text: before}}); len(c.Of) != 1 || c.Own || !c.Equal {
		t.Errorf("the page passed back as it was: ServedBack = %+v; want the log's page, equal", c)
	}
}

// Pages of one format whose lines differ from another's in a field or two
// (two services' logs, two sites' access logs, two exports of one table,
// two services' status pages), or in a key or a value (two locales, two
// apps' .env files, two infoboxes, two tables' columns), are not near
// copies of each other, nor are two servers' logs whose lines differ only
// in their times.
func TestRecordsOfOneFormatAreNoNearCopies(t *testing.T) {
	type form func(side, page int) string
	services := []string{"billing-api", "search-indexer"}
	paths := []string{"users", "orders", "invoices", "payments", "sessions", "tokens", "projects", "builds"}
	forms := map[string]form{
		"logfmt logs": func(side, page int) string {
			var b strings.Builder
			for j := range 20 {
				fmt.Fprintf(&b, "time=2026-12-06T08:%02d:%02dZ level=info msg=\"request completed\" service=%s method=GET path=/v1/%s status=200 dur=%dms\n",
					page, (j*3+side)%60, services[side], paths[(j*(side+3))%len(paths)], (j*7+side*5)%90)
			}
			return b.String()
		},
		"JSON logs": func(side, page int) string {
			var b strings.Builder
			for j := range 20 {
				fmt.Fprintf(&b, `{"level":"info","ts":"2026-12-06T08:%02d:%02d.%03dZ","logger":"%s","msg":"request completed","path":"/v1/%s/%d","status":200,"duration_ms":%d}`+"\n",
					page, j*3%60, (j*37+side*11)%1000, services[side], paths[(j+side)%len(paths)], j*13+page, (j*7+side*5)%90)
			}
			return b.String()
		},
		"access logs": func(side, page int) string {
			var b strings.Builder
			for j := range 15 {
				fmt.Fprintf(&b, "10.0.%d.%d - - [06/Dec/2026:08:%02d:%02d +0000] \"GET /%s HTTP/1.1\" 200 %d \"-\" \"Mozilla/5.0 (X11; Linux x86_64) Firefox/133.0\"\n",
					side, j*7+page, page, (j*4+side)%60, paths[(j+side*3)%len(paths)], 512+j*(side+3)*13)
			}
			return b.String()
		},
		"CSV exports": func(side, page int) string {
			var b strings.Builder
			b.WriteString("id,date,status,amount,currency,country\n")
			for j := range 15 {
				fmt.Fprintf(&b, "%d,2026-12-%02d,paid,%d.00,EUR,DE\n", page*100+j+side*1000, j+1, (j*37+side*13)%500)
			}
			return b.String()
		},
		"status pages": func(side, page int) string {
			var b strings.Builder
			fmt.Fprintf(&b, "# %s status\n\nAll Systems Operational\n\n", services[side])
			for j := range 8 {
				fmt.Fprintf(&b, "%s %s: Operational (99.9%d%% uptime over the past 90 days)\n", services[side], paths[j], (page+j+side)%10)
			}
			return b.String()
		},
		"locale files in two languages": func(side, page int) string {
			words := [][]string{{"Save", "Cancel", "Delete", "Search", "Settings", "Profile", "Logout", "Help", "Close", "Open"},
				{"Speichern", "Abbrechen", "Löschen", "Suchen", "Einstellungen", "Profil", "Abmelden", "Hilfe", "Schließen", "Öffnen"}}[side]
			var b strings.Builder
			b.WriteString("{\n")
			for j, key := range []string{"save", "cancel", "delete", "search", "settings", "profile", "logout", "help", "close", "open"} {
				fmt.Fprintf(&b, "  \"%s.%s.label\": \"%s\",\n", paths[page%len(paths)], key, words[(j+page)%len(words)])
			}
			b.WriteString("}\n")
			return b.String()
		},
		"two apps' .env files": func(side, page int) string {
			var b strings.Builder
			for j, key := range []string{"APP_NAME", "APP_ENV", "DB_CONNECTION", "DB_HOST", "DB_DATABASE", "CACHE_STORE", "QUEUE_CONNECTION", "MAIL_MAILER", "LOG_CHANNEL"} {
				fmt.Fprintf(&b, "%s_%s=%s\n", strings.ToUpper(paths[page%len(paths)]), key, [][]string{
					{"billing", "production", "pgsql", "primary", "billing", "redis", "sqs", "ses", "stack"},
					{"search", "staging", "mysql", "replica", "search", "memcached", "database", "smtp", "daily"}}[side][j])
			}
			return b.String()
		},
		"wiki infoboxes from one template": func(side, page int) string {
			var b strings.Builder
			fmt.Fprintf(&b, "{| class=\"infobox\"\n")
			for j, key := range []string{"Owner team", "On call rotation", "Primary language", "Data store", "Deploy target", "Support channel"} {
				fmt.Fprintf(&b, "| %s of the %s service | %s |\n", key, paths[page%len(paths)], [][]string{
					{"payments", "finance", "golang", "postgres", "kubernetes", "slack"},
					{"discovery", "platform", "kotlin", "elasticsearch", "nomad", "teams"}}[side][(j+page)%6])
			}
			b.WriteString("|}\n")
			return b.String()
		},
		"two tables' column lists": func(side, page int) string {
			var b strings.Builder
			fmt.Fprintf(&b, "CREATE TABLE %s (\n", paths[page%len(paths)])
			for j := range 8 {
				fmt.Fprintf(&b, "  %s_ref text NOT NULL DEFAULT '',\n", [][]string{
					{"customer", "invoice", "merchant", "ledger", "payout", "refund", "dispute", "charge"},
					{"document", "shard", "crawler", "snippet", "facet", "synonym", "ranking", "query"}}[side][(j+page)%8])
			}
			b.WriteString(");\n")
			return b.String()
		},
		"state changes, a word apart mid-line": func(side, page int) string {
			// Each pod's line comes twice, a state apart: the state is a
			// field this text repeats, and the other server's lines are
			// these with other states.
			states := [][]string{{"pending", "running", "waiting", "ready"}, {"failed", "stopped", "evicted", "unknown"}}[side]
			var b strings.Builder
			for j, pod := range []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"} {
				for k := range 2 {
					fmt.Fprintf(&b, "pod %s of the %s deployment went %s after the rollout began\n", pod, paths[page%len(paths)], states[(j+k+page)%len(states)])
				}
			}
			return b.String()
		},
		"health checks, only the times differ": func(side, page int) string {
			var b strings.Builder
			for j := range 20 {
				fmt.Fprintf(&b, "2026-12-06T08:%02d:%02d.%03dZ INFO probe GET /healthz answered 200 in 2ms from kubelet\n", page, j*3, (j*211+side*97)%1000)
			}
			return b.String()
		},
	}
	for name, f := range forms {
		s := &ServedLists{}
		for page := range 12 {
			s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("a://%d", page)}, []resource.Content{{Text: f(0, page)}})
		}
		copies := 0
		for page := range 12 {
			if c := s.ServedBack(resource.Key{Server: "b", URI: fmt.Sprintf("b://%d", page)}, []resource.Content{{Text: f(1, page)}}); len(c.Of) > 0 {
				copies++
			}
		}
		if copies > 0 {
			t.Errorf("%s: %d of the other server's 12 pages taken for copies; want none", name, copies)
		}
	}
}

// BenchmarkNearCopiesInTheModuleCache measures the near-copy test on real
// text: about 3,000 Go and Markdown files of 1–64 KiB from the Go module
// cache (every k-th by path), every ordered pair. near-pairs counts the
// pairs whose second file holds the first's sketch (versions of one file
// in two module versions are most of them); quoted-told counts the files
// whose copy with every line quoted is told a near copy of them (all of
// them but those too short for a sketch).
//
//	go test ./internal/mcp -run '^$' -bench NearCopiesInTheModuleCache -benchtime 1x
func BenchmarkNearCopiesInTheModuleCache(b *testing.B) {
	root := filepath.Join(build.Default.GOPATH, "pkg", "mod")
	if v := os.Getenv("GOMODCACHE"); v != "" {
		root = v
	}
	var paths []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md") {
			return nil
		}
		if fi, err := d.Info(); err == nil && fi.Size() >= 1<<10 && fi.Size() <= 64<<10 {
			paths = append(paths, p)
		}
		return nil
	})
	if len(paths) < 100 {
		b.Fatalf("%d files under %s; want a module cache (go mod download)", len(paths), root)
	}
	slices.Sort(paths)
	type doc struct {
		text   string
		sketch []uint64
		set    map[uint64]struct{}
	}
	var docs []doc
	for i := 0; i < len(paths); i += max(1, len(paths)/3000) {
		text, err := os.ReadFile(paths[i])
		if err != nil {
			b.Fatal(err)
		}
		c := readable([]resource.Content{{Text: string(text)}})
		docs = append(docs, doc{string(text), sketchOf(c), shingleSet(c)})
	}
	for b.Loop() {
		near, told := 0, 0
		for i := range docs {
			for j := range docs {
				if i != j && holdsSketch(docs[j].set, docs[i].sketch) {
					near++
				}
			}
			quoted := "> " + strings.ReplaceAll(docs[i].text, "\n", "\n> ")
			if holdsSketch(shingleSet(readable([]resource.Content{{Text: quoted}})), docs[i].sketch) {
				told++
			}
		}
		b.ReportMetric(float64(len(docs)), "files")
		b.ReportMetric(float64(near), "near-pairs")
		b.ReportMetric(float64(told), "quoted-told")
	}
}

// Texts with fewer than three words that hold a letter (an empty JSON
// object, a blank file, "null", "TODO", a version number, markup that
// folds to nothing) are alike by chance: no copies, short or not, of
// another server's; a short note of a few words still is one.
func TestTextsOfFewWordsAreNoCopies(t *testing.T) {
	s := &ServedLists{}
	few := []string{"{}\n", "[]", "null\n", "TODO\n", "\n", "1.0.0\n", "<!-- generated -->\n", "v20.11.1\n", "OK done", strings.Repeat("=", 80) + "\n"}
	for i, text := range few {
		s.NoteRead(resource.Key{Server: "a", URI: fmt.Sprintf("a://%d", i)}, []resource.Content{{Text: text}})
	}
	for i, text := range few {
		if c := s.ServedBack(resource.Key{Server: "b", URI: fmt.Sprintf("b://%d", i)}, []resource.Content{{Text: text}}); len(c.Of) > 0 {
			t.Errorf("%q: %+v; want no copy", text, c)
		}
	}
	const note = "note 3: vacuum at 2am."
	s.NoteRead(resource.Key{Server: "a", URI: "a://note"}, []resource.Content{{Text: note}})
	if c := s.ServedBack(resource.Key{Server: "b", URI: "b://note"}, []resource.Content{{Text: note}}); !c.Short || len(c.Of) != 1 {
		t.Errorf("a short note: %+v; want a short copy", c)
	}
	logo := []resource.Content{{IsBlob: true, Blob: bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 40)}}
	s.NoteRead(resource.Key{Server: "a", URI: "a://logo.png"}, logo)
	if c := s.ServedBack(resource.Key{Server: "b", URI: "b://logo.png"}, logo); len(c.Of) != 1 {
		t.Errorf("an image of 160 bytes: %+v; want a copy", c)
	}
}

// The memo of shingle sets gives what shingleSet gives, for a text seen
// before too, from many goroutines at once, and holds at most
// maxMemoHashes hashes however many texts pass.
func TestShingleSetsRememberedAreBoundedAndTheSame(t *testing.T) {
	var m shingleMemo
	text := func(i int) []resource.Content {
		var b strings.Builder
		for j := range 150 {
			fmt.Fprintf(&b, "line %d of page %d holds words %d and %d\n", j, i, i*j, i+j)
		}
		return []resource.Content{{Text: b.String()}}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 60 {
				cs := text(i % (40 + g))
				d, _ := contentsDigest(cs)
				if got, want := m.get(d, cs), shingleSet(cs); !maps.Equal(got, want) {
					t.Errorf("page %d: the remembered set differs from the text's (%d against %d hashes)", i, len(got), len(want))
					return
				}
			}
		})
	}
	wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sets {
		n += len(s)
	}
	t.Logf("%d sets, %d hashes", len(m.sets), n)
	if n != m.size || m.size > maxMemoHashes || len(m.order) != len(m.sets) || len(m.sets) == 0 {
		t.Errorf("the memo holds %d sets, %d hashes (counted %d), %d in order; want at most %d hashes, counted right", len(m.sets), n, m.size, len(m.order), maxMemoHashes)
	}
}

// A part of a page handed out (a section) is told when passed back as it
// is, and a page holding it among lines of its own is no copy of it: a
// licence's paragraph sits in many READMEs.
func TestAPartHandedOutIsToldOnlyWhole(t *testing.T) {
	const part = "Permission is hereby granted, free of charge, to any person obtaining a copy\nof this software and associated documentation files (the Software), to deal\nin the Software without restriction, including without limitation the rights\n"
	var s ServedLists
	s.NotePart(resource.Key{Server: "a", URI: "a://readme"}, []resource.Content{{Text: part}}, false)
	if c := s.ServedBack(resource.Key{Server: "hub", URI: "hub://up/1"}, []resource.Content{{Text: part}}); !c.Equal || len(c.Of) != 1 {
		t.Errorf("the part passed back as it is: %+v; want an equal copy", c)
	}
	readme := "# b, a tool for tables\n\nInstall it with go install, then run b with a file.\nIt reads CSV and TSV, and writes Markdown tables.\n\n## Licence\n\n" + part + "\nSee the LICENSE file for the rest of it.\n"
	if c := s.ServedBack(resource.Key{Server: "b", URI: "b://readme"}, []resource.Content{{Text: readme}}); len(c.Of) != 0 {
		t.Errorf("a page holding the part among its own lines: %+v; want no copy", c)
	}
}

// A bridge's page with a line added before another server's text, which
// the bridge's own page was answered with before: a copy of the other,
// not an equal one (its own earlier read is no match of another).
func TestACopyWithALineAddedIsNotEqualForItsOwnEarlierRead(t *testing.T) {
	const text = "Runbook: drain the node, cordon it, then roll the deployment back.\nWatch the error rate for ten minutes before you close the incident.\n"
	hub := resource.Key{Server: "hub", URI: "hub://up/1"}
	var s ServedLists
	s.NoteRead(resource.Key{Server: "docs", URI: "doc://runbook"}, []resource.Content{{Text: text}})
	s.NoteRead(hub, []resource.Content{{Text: "From the hub:\n" + text}})
	c := s.ServedBack(hub, []resource.Content{{Text: "From the hub:\n" + text}})
	if len(c.Of) != 1 || c.Of[0].Server != "docs" || c.Equal {
		t.Errorf("the bridge's page: %+v; want a copy of docs' page, not equal", c)
	}
}
