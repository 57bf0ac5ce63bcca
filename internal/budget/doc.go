// Package budget counts tokens exactly and trims text to a token budget.
//
// It is pure: no file, network or clock access. The BPE dictionaries that
// [Tokenizer] needs are compiled into the binary (github.com/pkoukk/tiktoken-go-loader),
// so counting never downloads anything.
//
// # Counting
//
// A [Counter] turns text into a token count. [Tokenizer] is the exact
// implementation over tiktoken-go for the cl100k_base and o200k_base
// encodings; tests and other packages may use any Counter, for example one
// that counts words.
//
// # Trimming
//
// [TrimToBudget] cuts text to the longest prefix that fits a number of tokens,
// preferring to cut after a newline, then at the end of a word, then between
// runes. Token counts are not additive across a cut (BPE may merge
// differently at the edge), so every prefix it returns has been counted as a
// whole.
package budget
