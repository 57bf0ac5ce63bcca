package budget

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// A Counter reports how many tokens a text costs.
//
// Count must be deterministic, never negative, and return 0 for "".
// Implementations used by more than one goroutine must be safe for concurrent use.
type Counter interface {
	Count(text string) int
}

// Encoding names accepted by [NewTokenizer].
const (
	// EncodingCL100K is the encoding of GPT-4 and GPT-3.5; it is the default.
	EncodingCL100K = "cl100k_base"
	// EncodingO200K is the encoding of GPT-4o and later OpenAI models.
	EncodingO200K = "o200k_base"
)

// ErrUnknownEncoding is returned (wrapped, with the name) by [NewTokenizer]
// for an encoding other than "", [EncodingCL100K] or [EncodingO200K].
var ErrUnknownEncoding = errors.New("unknown token encoding")

// A Tokenizer counts tokens exactly as an OpenAI BPE encoding does.
//
// A Tokenizer is safe for concurrent use. Tokenizers for the same encoding
// share one immutable encoder, which is built on first use and kept for the
// life of the process.
//
// Counting is ordinary-text counting: special-token text such as
// "<|endoftext|>" in the input is counted as the plain characters it is made
// of, never as the special token and never as an error, because resource
// content is data, not a prompt.
//
// Cost: about 5 MB/s of typical prose or code on one core; see [Tokenizer.Count]
// for how runs longer than [LongRun] bytes are bounded instead of merged.
type Tokenizer struct {
	encoding      string
	enc           *tiktoken.Tiktoken
	maxTokenBytes int
}

var (
	_ Counter    = (*Tokenizer)(nil)
	_ TokenSizer = (*Tokenizer)(nil)
)

// A TokenSizer knows the most bytes one token can cover. Counters that
// implement it let TrimToBudget and callers skip counting text that cannot
// fit: a text of b bytes has at least ceil(b/MaxTokenBytes()) tokens.
type TokenSizer interface {
	MaxTokenBytes() int
}

// Fits reports whether a text of n bytes may fit in maxTokens tokens under c:
// false only when c is a TokenSizer that proves it cannot.
func Fits(c Counter, n, maxTokens int) bool {
	ts, ok := c.(TokenSizer)
	if !ok || ts.MaxTokenBytes() <= 0 {
		return true
	}
	return maxTokens >= math.MaxInt/ts.MaxTokenBytes() || n <= maxTokens*ts.MaxTokenBytes()
}

var (
	// setLoader installs the offline BPE loader. tiktoken.SetBpeLoader writes a
	// package global without a lock, so it must happen exactly once and before
	// any encoding is loaded.
	setLoader sync.Once

	// encodersMu guards encoders.
	encodersMu sync.Mutex
	// encoders holds one built encoder per encoding name; building one parses a
	// multi-megabyte dictionary, so it is done once per process.
	encoders = map[string]*tiktoken.Tiktoken{}

	// loader records the longest token of every dictionary it loads.
	loader = &sizingLoader{base: tiktoken_loader.NewOfflineLoader()}
)

// sizingLoader wraps the offline loader and remembers the byte length of the
// longest token seen in any dictionary loaded so far.
type sizingLoader struct {
	base interface {
		LoadTiktokenBpe(file string) (map[string]int, error)
	}
	mu      sync.Mutex
	longest int
}

func (l *sizingLoader) LoadTiktokenBpe(file string) (map[string]int, error) {
	ranks, err := l.base.LoadTiktokenBpe(file)
	if err != nil {
		return nil, err
	}
	n := 0
	for tok := range ranks {
		n = max(n, len(tok))
	}
	l.mu.Lock()
	l.longest = max(l.longest, n)
	l.mu.Unlock()
	return ranks, nil
}

func (l *sizingLoader) maxTokenBytes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.longest
}

// NewTokenizer returns a Tokenizer for the named encoding: "" or
// [EncodingCL100K] (the default), or [EncodingO200K]. Any other name returns an
// error wrapping [ErrUnknownEncoding].
//
// The first call for an encoding builds its encoder from the dictionary
// embedded in the binary (tens to hundreds of milliseconds); later calls reuse it.
// It never touches the network or the disk: it installs tiktoken-go-loader's
// offline loader process-wide before loading anything.
func NewTokenizer(encoding string) (*Tokenizer, error) {
	switch encoding {
	case "":
		encoding = EncodingCL100K
	case EncodingCL100K, EncodingO200K:
	default:
		return nil, fmt.Errorf("budget: %w %q (want %q or %q)", ErrUnknownEncoding, encoding, EncodingCL100K, EncodingO200K)
	}
	enc, err := encoder(encoding)
	if err != nil {
		return nil, err
	}
	return &Tokenizer{encoding: encoding, enc: enc, maxTokenBytes: loader.maxTokenBytes()}, nil
}

func encoder(name string) (*tiktoken.Tiktoken, error) {
	setLoader.Do(func() {
		tiktoken.SetBpeLoader(loader)
	})
	encodersMu.Lock()
	defer encodersMu.Unlock()
	if enc, ok := encoders[name]; ok {
		return enc, nil
	}
	enc, err := tiktoken.GetEncoding(name)
	if err != nil {
		// The dictionaries are embedded, so this means a broken build; keep the
		// library's message out of our API.
		return nil, fmt.Errorf("budget: load encoding %q: %v", name, err)
	}
	encoders[name] = enc
	return enc, nil
}

// MaxTokenBytes returns an upper bound on the bytes one token covers (the
// longest token in the encoding's dictionary, at least), so any text of more
// than n*MaxTokenBytes() bytes counts more than n tokens. It implements
// [TokenSizer].
func (t *Tokenizer) MaxTokenBytes() int { return t.maxTokenBytes }

// Encoding returns the name of the tokenizer's encoding, such as "cl100k_base".
func (t *Tokenizer) Encoding() string { return t.encoding }

// LongRun is the byte length above which an unbroken run of letters,
// whitespace or punctuation is not handed to the BPE merge (see Count).
const LongRun = 512

// Count returns the number of tokens in text. Special-token text is counted
// as ordinary text (see [Tokenizer]). Invalid UTF-8 is counted as if each bad
// byte were U+FFFD, as tiktoken-go does.
//
// Count is exact for text without an unbroken run of more than [LongRun]
// bytes of one kind (letters, whitespace, or punctuation and symbols).
// tiktoken-go merges such a run in time quadratic in its length (300 KB of
// spaces takes tens of seconds), so each one is counted as its byte length
// plus 2 instead: an upper bound, since a token covers at least one byte and
// cutting the text at the run's edges changes at most one token on each side.
// Budgets stay safe (never under-counted); only pathological content, such as
// padding or a base64 line, costs more than it would exactly.
func (t *Tokenizer) Count(text string) int {
	if len(text) <= LongRun {
		return t.exact(text)
	}
	if !utf8.ValidString(text) {
		// tiktoken-go reads each bad byte as a 3-byte U+FFFD; do the same
		// first, so run lengths are measured on the text it merges.
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	n, start := 0, 0
	for lo, hi := range longRuns(text) {
		n += t.exact(text[start:lo]) + (hi - lo) + 2
		start = hi
	}
	return n + t.exact(text[start:])
}

func (t *Tokenizer) exact(text string) int {
	if text == "" {
		return 0
	}
	// EncodeOrdinary, unlike Encode, never looks for special tokens: Encode
	// with an empty allowed set would still scan for them on every piece, and
	// with disallowed "all" it panics on "<|endoftext|>". The encoder's maps
	// are read-only after construction and regexp2.Regexp is documented as
	// safe for concurrent use, so no lock is needed here (TestTokenizerConcurrent
	// runs this under -race).
	return len(t.enc.EncodeOrdinary(text))
}

// longRuns yields the byte ranges [lo, hi) of the maximal runs longer than
// LongRun bytes of letters, of whitespace, or of other non-digit characters.
// A combining mark continues whatever run it follows: cl100k_base puts marks
// with punctuation and o200k_base with letters, so "❤\uFE0F" repeated is one
// BPE piece in both. Digits never form long pieces: both encodings split
// them into groups of at most three.
func longRuns(text string) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		start, cls := 0, classDigit
		for i, r := range text {
			if unicode.IsMark(r) && i > 0 {
				continue
			}
			c := runeClass(r)
			if c == cls {
				continue
			}
			if cls != classDigit && i-start > LongRun && !yield(start, i) {
				return
			}
			start, cls = i, c
		}
		if cls != classDigit && len(text)-start > LongRun {
			yield(start, len(text))
		}
	}
}

type class uint8

const (
	classDigit class = iota
	classLetter
	classSpace
	classOther
)

func runeClass(r rune) class {
	switch {
	case unicode.IsLetter(r):
		return classLetter
	case unicode.IsNumber(r):
		return classDigit
	case unicode.IsSpace(r):
		return classSpace
	}
	return classOther
}
