package index

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/contextd/contextd/internal/lexical"
	"github.com/contextd/contextd/internal/resource"
)

// EmbeddingText is the text embedded for a descriptor: its description,
// then its title, then the words of its name (lexical.Words: split at
// camelCase, snake_case and punctuation, lowercased) unless the title
// already says them, joined as sentences. The words of the URI stand in for
// a missing description, after the title and name. The MIME type is left
// out: it is noise to a sentence encoder, and BM25F matches it.
//
// The description comes first because it is the one field written as a
// sentence, and a sentence encoder reads best what starts where its
// training sentences start: USE-lite adds a sinusoidal position signal to
// every token (package use, "Model"), so a text that opens with an
// identifier such as "TotalQuery Search. total query meta search engine."
// shifts the description into positions it rarely saw leading. On MetaTool's
// dev split, description-first took USE-lite alone from nDCG@10 0.615 to
// 0.633 and the default fusion from 0.683 to 0.692 before diversification
// (0.691 with it, eval/README.md) (per-query paired
// difference +0.009 ± 0.002 s.e.), against title-first; title-first in turn
// scored 0.624 against 0.572 for title, name, description, URI words and
// MIME type one per line.
//
// A description longer than [LongDescriptionWords] words (each character
// of a script written without spaces counting as one) comes last
// instead, so that the title and name stay within what the encoder reads.
// Neither MetaTool nor the godoc corpus has such descriptions, so this
// guard is unmeasured; it keeps real servers' long descriptions from
// hiding their titles.
func EmbeddingText(d resource.Descriptor) string {
	parts := make([]string, 0, 3)
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	name := strings.Join(lexical.Words(d.Name), " ")
	if name == strings.Join(lexical.Words(d.Title), " ") {
		name = ""
	}
	if words(d.Description) > LongDescriptionWords {
		// The encoder reads a bounded number of tokens (USE-lite: 128), so
		// a long description first would push the title and name out.
		add(d.Title)
		add(name)
		add(d.Description)
	} else {
		add(d.Description)
		add(d.Title)
		add(name)
	}
	if strings.TrimSpace(d.Description) == "" {
		add(URIWords(d.URI))
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			if r := b.String()[b.Len()-1]; r != '.' && r != '!' && r != '?' {
				b.WriteByte('.')
			}
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

// LongDescriptionWords is the most words a description may have and still
// come first in EmbeddingText: about 64 words are 90 SentencePiece tokens,
// leaving room for a title and name within USE-lite's 128.
const LongDescriptionWords = 64

// words counts a text's words for LongDescriptionWords: runs between
// spaces, and each character of a script written without spaces (Han,
// Hiragana, Katakana, Hangul, Thai) on its own, since an encoder's
// vocabulary splits those about per character.
func words(s string) int {
	n, inWord := 0, false
	for _, r := range s {
		switch {
		case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai):
			n++
			inWord = false
		case unicode.IsSpace(r):
			inWord = false
		case !inWord:
			n++
			inWord = true
		}
	}
	return n
}

// URIWords returns the words of a URI after its scheme: "demo://docs/a_b.md"
// becomes "docs a b md". The URI itself is never altered or resolved.
func URIWords(uri string) string {
	if _, rest, ok := strings.Cut(uri, "://"); ok {
		uri = rest
	}
	return strings.Join(strings.FieldsFunc(uri, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

func textHash(embedder, text string) string {
	h := sha256.Sum256([]byte(embedder + "\x00" + text))
	return hex.EncodeToString(h[:])
}

func lexDoc(d resource.Descriptor, content string) lexical.Doc {
	return lexical.Doc{
		ID: d.Key().String(), Name: d.Name, Title: d.Title,
		Description: d.Description, URI: d.URI, MIMEType: d.MIMEType,
		Content: content, Group: d.Server,
	}
}

func equalDescriptor(a, b resource.Descriptor) bool {
	return a.Server == b.Server && a.URI == b.URI && a.Name == b.Name && a.Title == b.Title &&
		a.Description == b.Description && a.MIMEType == b.MIMEType && a.Size == b.Size &&
		slices.Equal(a.Audience, b.Audience) && a.Priority == b.Priority && a.LastModified == b.LastModified
}

// Metadata keys of a stored document.
const (
	mServer, mURI, mName, mTitle, mDesc = "server", "uri", "name", "title", "description"
	mMIME, mSize, mAudience, mPriority  = "mime_type", "size", "audience", "priority"
	mLastModified, mHash                = "last_modified", "text_sha256"
	mStamp, mAt, mPassage, mSpan        = "content_stamp", "indexed_at", "passage", "span" // of a content
	mListedSince                        = "indexed_since"                                  // of a descriptor
)

func toMetadata(d resource.Descriptor, hash string) map[string]string {
	m := map[string]string{
		mServer: d.Server, mURI: d.URI, mName: d.Name, mTitle: d.Title, mDesc: d.Description,
		mMIME: d.MIMEType, mHash: hash, mLastModified: d.LastModified,
		mAudience: strings.Join(d.Audience, ","),
	}
	if d.Size > 0 {
		m[mSize] = strconv.FormatInt(d.Size, 10)
	}
	if d.Priority != 0 {
		m[mPriority] = strconv.FormatFloat(d.Priority, 'g', -1, 64)
	}
	return m
}

func fromMetadata(m map[string]string) (resource.Descriptor, string, bool) {
	d := resource.Descriptor{
		Server: m[mServer], URI: m[mURI], Name: m[mName], Title: m[mTitle], Description: m[mDesc],
		MIMEType: m[mMIME], LastModified: m[mLastModified],
	}
	if d.Server == "" || d.URI == "" || m[mHash] == "" {
		return d, "", false
	}
	if a := m[mAudience]; a != "" {
		d.Audience = strings.Split(a, ",")
	}
	d.Size, _ = strconv.ParseInt(m[mSize], 10, 64)
	d.Priority, _ = strconv.ParseFloat(m[mPriority], 64)
	return d, m[mHash], true
}
