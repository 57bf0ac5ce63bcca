package mcp

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"html"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/contextd/contextd/internal/redact"
	"github.com/contextd/contextd/internal/resource"
)

// Near copies. A bridge in front of contextd may pass back what it read
// from contextd rewritten: every line quoted, lines added at the start,
// within or at the end, words put in front of the first line or within
// lines, a word of every line replaced (a nonce stamped on each read),
// the text split into several items. No digest of the whole text
// survives that, but its lines' words do. A text is told by its
// shingles: the words of each line (runs of letters and digits,
// lower-cased) taken four in a row, or all of them for a line of fewer;
// the texts of a read's items are joined first. A read the MCP server
// answered keeps a sketch, its nearSketch smallest shingle hashes; a read
// whose shingles hold every hash of a sketch of nearMinSketch or more
// holds that text nearly whole.
//
// A rewrite of those kinds keeps every line's shingles, where a page
// made from the same template as another (one word changed in a line)
// loses that line's: a sketch of a short text is all its shingles, so
// such pages are not near copies of each other. Of a long text the
// sketch is a sample, and a page differing from it in a word or two is
// taken for a near copy: it is, nearly.
//
// A word replaced in every line (a nonce stamped on each read) breaks
// every shingle of a short line, and such a copy is not told: a line the
// same but for one word is also what a template's slot, a table's column,
// a record's field or a translated string makes of it, and honest pages
// of one form were taken for stamped copies of each other however that
// was narrowed (logs, CSV, locale and .env files, infoboxes, feature
// tables, filled-in reports). A bridge stamping what it passes back is
// bounded by the holds and the pace, as any rewrite past these tests.
const (
	shingleWords  = 4
	nearSketch    = 32
	nearMinSketch = 4
	// nearTextBytes bounds the text shingled, for the cost of a read.
	nearTextBytes = 256 << 10
)

// readable returns contents with each text as it reads
// (redact.Skeleton), for the digests and shingles: what shows as nothing,
// or only marks the letter before it (zero-width spaces, soft hyphens,
// combining marks), dropped, and letters of other scripts, fullwidth or
// mathematical forms that look like Latin ones made those. A bridge
// sprinkling zero-width spaces within every word, or swapping Cyrillic
// letters for Latin ones, passed its copies back untold, the text reading
// the same. Markup is taken as it shows first (unmarked), and Markdown's
// marks within words last (unemphasized). contents itself is not changed;
// plain texts are kept.
func readable(contents []resource.Content) []resource.Content {
	var out []resource.Content
	for i, c := range contents {
		if c.IsBlob {
			continue
		}
		k := unemphasized(redact.Skeleton(scriptMarks(unmarked(c.Text))))
		if k == c.Text {
			continue
		}
		if out == nil {
			out = slices.Clone(contents)
		}
		out[i].Text = k
	}
	if out == nil {
		return contents
	}
	return out
}

// unmarked returns text as HTML shows it, as far as copies go: comments
// dropped, inline elements' tags dropped (see inlineTag: "vac<b></b>uum"
// shows as "vacuum"), and character references decoded ("&#97;" shows as
// "a"), in that order (a reference to "<" shows as one). A bridge putting
// an empty comment, a pair of tags or a letter as a reference within
// every word passed its copies back untold. Both sides
// of a comparison are taken so. What holds neither "<" nor "&" is kept as
// is.
func unmarked(text string) string {
	if !strings.ContainsAny(text, "<&") {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	rest := text
	for {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		rest = rest[i:]
		if strings.HasPrefix(rest, "<!--") {
			n := commentLen(rest)
			if n < 0 {
				b.WriteString(rest) // not closed: shown as written
				break
			}
			rest = rest[n:]
			continue
		}
		if run := inlineTags(rest); len(run) > 0 {
			// The run of tags is read once: whether it stands within a
			// word is asked of what comes before and after it all.
			end := 0
			for _, n := range run {
				end += n
			}
			within := withinWord(b.String(), rest[end:])
			at := 0
			for _, n := range run {
				if tag := rest[at : at+n]; !within && (n > maxShortTag || strings.Contains(tag, "\n")) {
					b.WriteString(tag)
				}
				at += n
			}
			rest = rest[end:]
			continue
		}
		b.WriteByte('<')
		rest = rest[1:]
	}
	out := b.String()
	if strings.IndexByte(out, '&') >= 0 {
		out = html.UnescapeString(out)
	}
	return out
}

// commentLen returns the length of the HTML comment text starts with
// ("<!--" is its start), as a browser ends it: at "-->" or "--!>", or at
// once for "<!-->" and "<!--->"; -1 if it is not closed.
func commentLen(text string) int {
	for _, abrupt := range []string{"<!-->", "<!--->"} {
		if strings.HasPrefix(text, abrupt) {
			return len(abrupt)
		}
	}
	// The first "--" followed by ">" or "!>": one pass, whatever follows
	// (searching for each ending over the whole rest was quadratic in a
	// page of comments).
	body := text[4:]
	for i := 0; ; {
		j := strings.Index(body[i:], "--")
		if j < 0 {
			return -1
		}
		i += j + 2
		switch {
		case strings.HasPrefix(body[i:], ">"):
			return 4 + i + 1
		case strings.HasPrefix(body[i:], "!>"):
			return 4 + i + 2
		}
		i-- // "--->": the next "--" may start at the second dash
	}
}

// scriptMarks returns text with the nonspacing marks that belong to a
// script (Thai tone marks, Devanagari vowel signs, Hebrew points) moved
// to plane 15's private use area (keptMark), where redact.Skeleton, which
// drops every mark, keeps them: in those scripts a mark makes another
// word ("ไม่" and "ไม้" are not the same), where the marks every script
// shares (Unicode's Inherited: accents, the combining acute) only accent
// a letter, and are dropped. Thai pages alike but for their tone marks
// were taken for copies of each other.
func scriptMarks(text string) string {
	if !strings.ContainsFunc(text, scriptMark) {
		return text
	}
	return strings.Map(func(r rune) rune {
		if scriptMark(r) {
			return keptMark + r
		}
		return r
	}, text)
}

// keptMark is where scriptMarks moves marks to (plane 15, U+F0000 on).
const keptMark = 0xf0000

// scriptMark reports whether r is a nonspacing mark of one script.
func scriptMark(r rune) bool {
	return r >= 0x0590 && unicode.Is(unicode.Mn, r) && !unicode.Is(unicode.Inherited, r)
}

// maxTag bounds a tag unmarked drops, in bytes. Tags over maxShortTag,
// or spanning lines, are dropped only within a word: there an
// attribute's value (a link's destination, a time's datetime) may be what
// tells honest pages apart, and only a tag breaking a word hides a copy
// from the shingles.
const (
	maxTag      = 512
	maxShortTag = 64
)

// inlineTags returns the lengths of the run of inline elements' tags
// text starts with (see inlineTag), each parsed once; none if it starts
// with none.
func inlineTags(text string) []int {
	var run []int
	for at := 0; at < len(text) && text[at] == '<'; {
		n := inlineTag(text[at:])
		if n == 0 {
			break
		}
		run = append(run, n)
		at += n
	}
	return run
}

// withinWord reports whether before ends, and after starts, with a
// letter or digit: what stands between them is within a word.
func withinWord(before, after string) bool {
	r, _ := utf8.DecodeLastRuneInString(before)
	a, _ := utf8.DecodeRuneInString(after)
	return before != "" && after != "" && wordRune(r) && wordRune(a)
}

// A startTag is an HTML tag as read: its element's name, lower-cased,
// its length in bytes, and whether it ends an element ("</b>").
type startTag struct {
	name string
	n    int
	end  bool
}

// parseTag reads the tag text starts with ("<" is its start): a name of
// ASCII letters, digits and dashes, then attributes (a quoted value may
// hold "<", ">" and line breaks) up to ">", within maxTag bytes. ok is
// false for what is no tag ("a < b", "List<String, Integer>" has no
// end).
func parseTag(text string) (t startTag, ok bool) {
	i := 1
	if i < len(text) && text[i] == '/' {
		t.end = true
		i++
	}
	start := i
	for i < len(text) && i-start < 32 && (isASCIIAlnum(text[i]) || i > start && text[i] == '-') {
		i++
	}
	if i == start || i == len(text) || !isASCIIAlpha(text[start]) {
		return t, false
	}
	t.name = strings.ToLower(text[start:i])
	if !isTagSpace(text[i]) && text[i] != '/' && text[i] != '>' {
		return t, false
	}
	limit := min(len(text), maxTag)
	for i < limit {
		// Between attributes.
		for i < limit && (isTagSpace(text[i]) || text[i] == '/') {
			i++
		}
		if i >= limit || text[i] == '<' {
			return t, false
		}
		if text[i] == '>' {
			t.n = i + 1
			return t, true
		}
		// An attribute's name, as a browser reads it: it may start with
		// "=" and hold quotes ("<b =x>", "<b "q">" are b tags).
		nameStart := i
		for i < limit && !isTagSpace(text[i]) && text[i] != '/' && text[i] != '>' && text[i] != '<' && (text[i] != '=' || i == nameStart) {
			i++
		}
		for i < limit && isTagSpace(text[i]) {
			i++
		}
		if i < limit && text[i] == '=' {
			i++
			for i < limit && isTagSpace(text[i]) {
				i++
			}
			if i < limit && (text[i] == '"' || text[i] == '\'') {
				q := text[i]
				end := strings.IndexByte(text[i+1:limit], q)
				if end < 0 {
					return t, false
				}
				i += 1 + end + 1
			} else {
				for i < limit && !isTagSpace(text[i]) && text[i] != '>' && text[i] != '<' {
					i++
				}
			}
		}
	}
	return t, false
}

// inlineTag returns the length of the tag text starts with if it is a
// start or end tag of an inline HTML element (see inlineElements, and
// parseTag for what a tag is); 0 otherwise. Only those: "List<String>"
// and "<Callout variant=…/>" are code and props, which tell pages apart
// (code files from one template, alike but for their type parameters,
// were taken for copies when every tag was dropped). What an element
// holds is kept, hidden or not: a tab's panel, an accordion's body, a
// section that fades in, a Vue template are shown in time, and pages
// alike but for them were taken for copies when hidden elements were
// dropped with what they hold.
func inlineTag(text string) int {
	if t, ok := parseTag(text); ok && inlineElements[t.name] {
		return t.n
	}
	return 0
}

func isTagSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

func isASCIIAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isASCIIAlnum(c byte) bool { return isASCIIAlpha(c) || '0' <= c && c <= '9' }

// unemphasized returns text with Markdown's marks within words dropped,
// as they show: runs of "**" or more, "~~", "`", "{}", "[", a link's
// "](#fragment)" or "]()" and escaping backslashes, between two letters ("va**cu**um" and "[va](#)cuum" show as "vacuum"). A bridge
// putting emphasis, escapes or links within every word passed its copies
// back untold. Marks at a word's edge are kept ("*done*" and "done" are
// other texts to a digest, and words are words without them), and so is
// an underscore (snake_case is no emphasis). What holds none of them is
// kept as is.
func unemphasized(text string) string {
	if !strings.ContainsAny(text, markChars+"]") {
		return text
	}
	var b strings.Builder
	b.Grow(len(text))
	afterWord := false
	for i := 0; i < len(text); {
		if n := markRun(text[i:]); n > 0 {
			r, _ := utf8.DecodeRuneInString(text[i+n:])
			if afterWord && i+n < len(text) && letterRune(r) && strings.IndexByte(text[i:i+n], '_') < 0 {
				i += n
				continue
			}
			b.WriteString(text[i : i+n])
			i += n
			afterWord = false
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		b.WriteString(text[i : i+size])
		afterWord = letterRune(r)
		i += size
	}
	return b.String()
}

// letterRune reports whether r is a letter (or a mark kept as one, see
// scriptMarks). Markdown's marks fold between letters only: between
// digits they are arithmetic ("2**10").
func letterRune(r rune) bool {
	return unicode.IsLetter(r) || r >= keptMark && r < keptMark+0x20000
}

// markChars are the Markdown marks unemphasized drops.
const markChars = "*_~`\\{}["

// markRun returns the length of the run of Markdown marks text starts
// with (see unemphasized), 0 if it starts with none.
func markRun(text string) int {
	i := 0
	for i < len(text) {
		switch c := text[i]; {
		case c == '\\':
			// An escape only before punctuation: "\*" shows "*".
			if i+1 == len(text) || !isASCIIPunct(text[i+1]) {
				return i
			}
			i++
		case c == '{' || c == '}':
			// An empty expression only (MDX's "{}"): braces around
			// something group it (LaTeX's "\frac{a}{bc}", "${VAR}x").
			if !strings.HasPrefix(text[i:], "{}") {
				return i
			}
			i += 2
		case c == '*' || c == '~':
			// Emphasis and strikethrough doubled ("va**cu**um"): one
			// alone is as likely a product or a range ("a*b", "10時～18時").
			n := 1
			for i+n < len(text) && text[i+n] == c {
				n++
			}
			if n < 2 {
				return i
			}
			i += n
		case strings.IndexByte(markChars, c) >= 0:
			i++
		case strings.HasPrefix(text[i:], "]("):
			// A link to nowhere or within the page: where a link to
			// another page goes tells pages apart (a version, a host).
			dest := text[i+2 : min(len(text), i+2+64)]
			end := strings.IndexAny(dest, ") \t\n")
			if end < 0 || dest[end] != ')' || end > 0 && dest[0] != '#' {
				return i
			}
			i += 2 + end + 1
		default:
			return i
		}
	}
	return i
}

func isASCIIPunct(c byte) bool {
	return '!' <= c && c <= '/' || ':' <= c && c <= '@' || '[' <= c && c <= '`' || '{' <= c && c <= '~'
}

// wordRune reports whether r is part of a word (appendWords).
func wordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r >= keptMark && r < keptMark+0x20000
}

// inlineElements are the HTML elements shown within a line of text, with
// no break of their own (phrasing content): empty, or around part of a
// word, they leave it the word it was.
var inlineElements = map[string]bool{
	"a": true, "abbr": true, "b": true, "bdi": true, "bdo": true, "big": true, "cite": true,
	"code": true, "data": true, "del": true, "dfn": true, "em": true, "font": true, "i": true, "ins": true,
	"kbd": true, "mark": true, "q": true, "s": true, "samp": true, "small": true, "span": true,
	"strike": true, "strong": true, "sub": true, "sup": true, "time": true, "tt": true, "u": true,
	"var": true, "wbr": true, "label": true, "nobr": true,
}

// nearText returns the texts of contents joined, at most nearTextBytes.
func nearText(contents []resource.Content) string {
	var b strings.Builder
	for _, c := range contents {
		if c.IsBlob {
			continue
		}
		left := nearTextBytes - b.Len()
		if left <= 0 {
			break
		}
		b.WriteString(c.Text[:min(len(c.Text), left)])
	}
	return b.String()
}

// eachShingle calls f with the hash of each shingle of text. With loose
// set it also calls f with those a line would have with a word or two
// put in within it (see skipShingles), and those a line of few words,
// or a line broken in two, would have within the text: each line's first
// and last one to three words, and the shingles across each two lines
// joined, next to each other or with one line between (a line put in
// within a line).
// Lines without words are passed over.
func eachShingle(text string, loose bool, f func(uint64)) {
	type lineWords struct {
		words []word
		first string // the first word, for glue
	}
	var lines []lineWords
	for line := range strings.Lines(text) {
		words, first := appendWords(nil, line)
		if len(words) == 0 {
			continue
		}
		lineShingles(words, func(w []word) { f(shingleHash(w)) })
		if !loose {
			continue
		}
		skipShingles(words, f)
		for n := 1; n < shingleWords && n < len(words); n++ {
			f(shingleHash(words[:n]))
			f(shingleHash(words[len(words)-n:]))
		}
		lines = append(lines, lineWords{words, first})
		if len(lines) > 3 {
			lines = lines[1:]
		}
		last := len(lines) - 1
		for _, l := range lines[max(0, last-2):last] {
			a := l.words
			tail := words[:min(len(words), shingleWords)]
			joinedShingles(a[max(0, len(a)-shingleWords+1):], tail, f)
			// The line may have been broken within a word.
			head := a[max(0, len(a)-shingleWords):]
			glued := append(slices.Clone(head[:len(head)-1]), head[len(head)-1].glue(first))
			joinedShingles(glued, tail[1:], f)
		}
	}
}

// lineShingles calls f with the words of each shingle of a line's words:
// each four in a row, or all of them if fewer.
func lineShingles(words []word, f func([]word)) {
	if len(words) < shingleWords {
		f(words)
	}
	for i := 0; i+shingleWords <= len(words); i++ {
		f(words[i : i+shingleWords])
	}
}

// skipShingles calls f with the hashes of the shingles words would have
// less one word, or two in a row, put in within a shingle: a word added
// mid-line (a nonce, "[hub]") keeps the line's shingles so.
func skipShingles(words []word, f func(uint64)) {
	var w [shingleWords]word
	for i := range words {
		for skip := 1; skip <= 2; skip++ {
			if i+shingleWords+skip > len(words) {
				break
			}
			for at := 1; at < shingleWords; at++ {
				copy(w[:at], words[i:i+at])
				copy(w[at:], words[i+at+skip:i+shingleWords+skip])
				f(shingleHash(w[:]))
			}
		}
	}
}

// joinedShingles calls f with the hashes of the shingles of a and b
// joined (a few words each): all of them for fewer than shingleWords.
func joinedShingles(a, b []word, f func(uint64)) {
	joined := append(slices.Clone(a), b...)
	if len(joined) < shingleWords {
		f(shingleHash(joined))
		return
	}
	for i := 0; i+shingleWords <= len(joined); i++ {
		f(shingleHash(joined[i : i+shingleWords]))
	}
}

// A word is the FNV-1a hash of a word's lower-cased runes, an unfinished
// one: two halves of a word glue into the word's hash.
type word uint64

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func (w word) add(r rune) word {
	for ; r != 0; r >>= 8 {
		w = (w ^ word(r&0xff)) * fnvPrime
	}
	return w
}

// glue returns the hash of w's word followed by next (lower-cased).
func (w word) glue(next string) word {
	for _, r := range next {
		w = w.add(r)
	}
	return w
}

// shingleHash returns the hash of words, in order, one-way (see oneWay).
func shingleHash(words []word) uint64 {
	h := uint64(fnvOffset) ^ uint64(len(words))
	for _, w := range words {
		h = (h ^ uint64(w)) * fnvPrime
		h ^= h >> 29
	}
	return oneWay(h)
}

// shingleCipher is AES-128 under a fixed, public key (see oneWay).
var shingleCipher = func() cipher.Block {
	b, err := aes.NewCipher([]byte("contextd shingle"))
	if err != nil {
		panic(err)
	}
	return b
}()

// oneWay returns E(h) XOR h, E being shingleCipher (the Matyas–Meyer–Oseas
// construction): no h is found for a value but by trying. The steps above
// it can each be undone, so two hashes kept across restarts (see
// servedstate.go) of shingles a word apart gave that word's hash exactly,
// and a word list or counting (a PIN, an account number) the word;
// through oneWay, a text's words are found from its sketch only by
// guessing whole runs of them, as its digest confirms a guessed text.
func oneWay(h uint64) uint64 {
	var in, out [aes.BlockSize]byte
	binary.LittleEndian.PutUint64(in[:], h)
	shingleCipher.Encrypt(out[:], in[:])
	return binary.LittleEndian.Uint64(out[:]) ^ h
}

// appendWords appends line's words, lower-cased, to words; it returns
// them and the first, lower-cased.
func appendWords(words []word, line string) ([]word, string) {
	first := ""
	start := -1
	h := word(fnvOffset)
	for i := 0; i <= len(line); {
		r, size := rune(0), 1
		if i < len(line) {
			r, size = utf8.DecodeRuneInString(line[i:])
		}
		if i < len(line) && wordRune(r) {
			if start < 0 {
				start, h = i, word(fnvOffset)
			}
			h = h.add(unicode.ToLower(r))
		} else if start >= 0 {
			if len(words) == 0 {
				first = strings.ToLower(line[start:i])
			}
			words = append(words, h)
			start = -1
		}
		i += size
	}
	return words, first
}

// sketchOf returns the sketch of contents: the nearSketch smallest
// distinct shingle hashes, ascending; nil under nearMinSketch.
func sketchOf(contents []resource.Content) []uint64 {
	set := map[uint64]struct{}{}
	eachShingle(nearText(contents), false, func(h uint64) { set[h] = struct{}{} })
	if len(set) < nearMinSketch {
		return nil
	}
	all := make([]uint64, 0, len(set))
	for h := range set {
		all = append(all, h)
	}
	slices.Sort(all)
	// A copy: the sketch is kept for thousands of reads, all of its
	// shingles not.
	return slices.Clone(all[:min(len(all), nearSketch)])
}

// shingleSet returns the shingle hashes of contents, the lines' ends
// with them (see eachShingle).
func shingleSet(contents []resource.Content) map[uint64]struct{} {
	set := map[uint64]struct{}{}
	eachShingle(nearText(contents), true, func(h uint64) { set[h] = struct{}{} })
	return set
}

// A shingleMemo keeps the shingle sets of texts compared, by their
// digest (contentsDigest), up to maxMemoHashes hashes in all, the first
// kept dropped first (a hit does not move a set): a page read again (each request reading the same
// pages from a server that lets nothing be cached) is not shingled
// again, which was most of a read's copy check. The zero value is empty
// and ready; it is safe for concurrent use, and a set it returns is
// never changed.
type shingleMemo struct {
	mu    sync.Mutex
	sets  map[[32]byte]map[uint64]struct{}
	order [][32]byte // oldest first
	size  int        // the hashes sets hold
}

// maxMemoHashes bounds the hashes a shingleMemo holds (a few MB); a set
// of over a quarter of it is not kept.
const maxMemoHashes = 1 << 18

// get returns shingleSet(contents), whose digest is d.
func (m *shingleMemo) get(d [32]byte, contents []resource.Content) map[uint64]struct{} {
	m.mu.Lock()
	set, ok := m.sets[d]
	m.mu.Unlock()
	if ok {
		return set
	}
	set = shingleSet(contents)
	if len(set) > maxMemoHashes/4 {
		return set
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sets[d]; ok {
		return set
	}
	for m.size+len(set) > maxMemoHashes && len(m.order) > 0 {
		m.size -= len(m.sets[m.order[0]])
		delete(m.sets, m.order[0])
		m.order = m.order[1:]
	}
	if m.sets == nil {
		m.sets = map[[32]byte]map[uint64]struct{}{}
	}
	m.sets[d] = set
	m.order = append(m.order, d)
	m.size += len(set)
	return set
}

// holdsSketch reports whether set, a read's shingleSet, holds every hash
// of sketch, a sketch of nearMinSketch or more.
func holdsSketch(set map[uint64]struct{}, sketch []uint64) bool {
	if len(sketch) < nearMinSketch {
		return false
	}
	for _, h := range sketch {
		if _, ok := set[h]; !ok {
			return false
		}
	}
	return true
}
