package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	"slices"
)

// A host's own file can be large for reasons contextd has no part in:
// Claude Code keeps every project's prompt history in ~/.claude.json,
// which grows to tens of megabytes. Decoded whole into YAML nodes (twice),
// 32 MB took 3.5 s and 1.5 GB at every start of `contextd mcp` and every
// reload. Before it is decoded, a JSON file over pruneFrom bytes has its
// bulk blanked: the value of each top-level key contextd does not read,
// when over maxUnreadValue bytes, becomes null, or, when an object, an
// object of only its members whose keys name a token or auth (written
// there, a token is refused: see authLike). What the key checks look at
// stays: every top-level key, and those members whole. The newlines of
// what is blanked are kept, so every later line keeps its number.
const (
	pruneFrom      = 1 << 20
	maxUnreadValue = 4 << 10
)

// pruneUnread returns data, valid standard JSON, with the bulk under keys
// contextd does not read blanked as above; data itself when it is small,
// not a JSON object, or holds nothing to blank.
func pruneUnread(data []byte) []byte {
	if len(data) < pruneFrom {
		return data
	}
	type span struct {
		start, end int
		with       []byte
	}
	var blank []span
	members(data, func(key string, start, end int) {
		v := data[start:end]
		if slices.Contains(topKeys, key) || len(v) <= maxUnreadValue {
			return
		}
		with := []byte("null")
		if v[0] == '{' {
			with = []byte("{")
			members(v, func(key string, s, e int) {
				if k := normalKey(key); strings.Contains(k, "token") || strings.Contains(k, "auth") {
					if len(with) > 1 {
						with = append(with, ',')
					}
					kq, _ := json.Marshal(key)
					with = append(append(append(with, kq...), ':'), v[s:e]...)
				}
			})
			with = append(with, '}')
		}
		blank = append(blank, span{start, end, with})
	})
	if len(blank) == 0 {
		return data
	}
	out := make([]byte, 0, min(len(data), 1<<20))
	at := 0
	for _, b := range blank {
		out = append(out, data[at:b.start]...)
		out = append(out, b.with...)
		for range bytes.Count(data[b.start:b.end], []byte("\n")) - bytes.Count(b.with, []byte("\n")) {
			out = append(out, '\n')
		}
		at = b.end
	}
	return append(out, data[at:]...)
}

// members calls f with each member of the JSON object that obj, valid
// JSON, holds (after any spaces): its key, decoded, and the span of its
// value in obj. Nothing is called when obj is not an object.
func members(obj []byte, f func(key string, start, end int)) {
	membersAt(obj, func(key string, _, start, end int) { f(key, start, end) })
}

// membersAt is members, also giving where each member's key starts.
func membersAt(obj []byte, f func(key string, keyStart, start, end int)) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return // "}" of an empty object, or the end
		}
		keyStart, kEnd := i, skipValue(obj, i)
		var key string
		if json.Unmarshal(obj[i:kEnd], &key) != nil {
			return
		}
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		start := skipSpace(obj, i+1)
		end := skipValue(obj, start)
		f(key, keyStart, start, end)
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ',' {
			return
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value that starts at b[i], b being
// valid JSON.
func skipValue(b []byte, i int) int {
	depth, in := 0, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\':
			i++
		case in && c == '"':
			in = false
			if depth == 0 {
				return i + 1
			}
		case in:
		case c == '"':
			in = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i // a scalar's end: the bracket that closes its parent
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return i
		}
	}
	return i
}

// maxRepeatNotes bounds the repeated keys dropRepeatedKeys names.
const maxRepeatNotes = 10

// dropRepeatedKeys returns data, valid standard JSON, with every member
// whose key the same object repeats later blanked (spaces; newlines kept,
// so every line keeps its number), as JSON.parse and the hosts that use it
// keep the last; and, for each, "line N: key K is repeated: the one at
// line M is used". data itself when nothing repeats.
func dropRepeatedKeys(data []byte) ([]byte, []string) {
	var blank [][2]int
	var notes []string
	var newlines []int // offsets of data's newlines, for line numbers
	for i, c := range data {
		if c == '\n' {
			newlines = append(newlines, i)
		}
	}
	line := func(at int) int {
		n, _ := slices.BinarySearch(newlines, at)
		return n + 1
	}
	repeats := 0
	var walk func(start, end int)
	walk = func(start, end int) {
		v := data[start:end]
		switch v[0] {
		case '{':
			seen := map[string][2]int{} // key → where its member starts, and its value ends
			membersAt(v, func(key string, keyStart, s, e int) {
				if prev, ok := seen[key]; ok {
					// A member followed by another has a comma after it.
					comma := bytes.IndexByte(v[prev[1]:], ',')
					blank = append(blank, [2]int{start + prev[0], start + prev[1] + comma + 1})
					if repeats++; repeats <= maxRepeatNotes {
						notes = append(notes, fmt.Sprintf("line %d: key %s is repeated: the one at line %d is used", line(start+prev[0]), keyShown(key), line(start+keyStart)))
					}
				}
				seen[key] = [2]int{keyStart, e}
				walk(start+s, start+e)
			})
		case '[':
			for i := skipSpace(v, 1); i < len(v) && v[i] != ']'; {
				e := skipValue(v, i)
				walk(start+i, start+e)
				i = skipSpace(v, e)
				if i < len(v) && v[i] == ',' {
					i = skipSpace(v, i+1)
				}
			}
		}
	}
	i := skipSpace(data, 0)
	if i == len(data) {
		return data, nil
	}
	walk(i, skipValue(data, i))
	if len(blank) == 0 {
		return data, nil
	}
	if repeats > maxRepeatNotes {
		notes = append(notes, fmt.Sprintf("%d more keys are repeated: the last of each is used", repeats-maxRepeatNotes))
	}
	out := bytes.Clone(data)
	for _, b := range blank {
		for j := b[0]; j < b[1]; j++ {
			if out[j] != '\n' && out[j] != '\r' {
				out[j] = ' '
			}
		}
	}
	return out, notes
}

// isJSON reports whether data, once standardized, is JSON: an object (a
// host's file) that parses as JSON.
func isJSON(data []byte) bool {
	i := skipSpace(data, 0)
	return i < len(data) && data[i] == '{' && json.Valid(data)
}

// repeatsKey reports whether a mapping under n repeats a key.
func repeatsKey(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if n.Kind == yaml.MappingNode {
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode {
				if seen[k.Value] {
					return true
				}
				seen[k.Value] = true
			}
		}
	}
	for _, c := range n.Content {
		if repeatsKey(c) {
			return true
		}
	}
	return false
}

// yamlSafe returns data, valid JSON, in a form YAML reads as JSON.parse
// would read data: YAML refuses some strings JSON allows (the escapes \/
// and of surrogates, written by PHP and Python by default, or by
// JSON.stringify of a cut emoji; raw DEL, C1 controls and U+FFFE/U+FFFF),
// and keys over 1,024 characters unless marked explicit ("? "). Such
// strings are written again with escapes YAML knows; nothing else
// changes, and no newline is added or taken (no string holds one), so
// lines keep their numbers. data itself when nothing needs it.
func yamlSafe(data []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(data); i++ {
		if data[i] != '"' {
			continue
		}
		end := skipValue(data, i)
		str := data[i:end]
		var fixed []byte
		if !yamlReads(str) {
			fixed = appendYAMLString(nil, str)
		}
		// A key YAML reads without "? " must be on one line, with what
		// follows it up to ":", and within 1,024 characters.
		j := skipSpace(data, end)
		long := false
		if j < len(data) && data[j] == ':' {
			n := end - i
			if fixed != nil {
				n = len(fixed)
			}
			long = n+j-end > maxSimpleKey || bytes.ContainsAny(data[end:j], "\r\n")
		}
		if fixed != nil || long {
			if out == nil {
				out = make([]byte, 0, len(data)+64)
			}
			out = append(out, data[last:i]...)
			if long {
				out = append(out, "? "...)
			}
			if fixed != nil {
				out = append(out, fixed...)
			} else {
				out = append(out, str...)
			}
			last = end
		}
		i = end - 1
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// maxSimpleKey is the longest key, quotes included, YAML reads without an
// explicit "? " (1,024 characters; counted in bytes here, to be safe).
const maxSimpleKey = 1000

// yamlReads reports whether YAML reads the JSON string str (quotes
// included) as JSON does.
func yamlReads(str []byte) bool {
	if !utf8.Valid(str) {
		return false
	}
	for i := 0; i < len(str); i++ {
		switch c := str[i]; {
		case c == '\\':
			i++
			if i < len(str) && str[i] == '/' {
				return false
			}
			if i+2 < len(str) && str[i] == 'u' && (str[i+1] == 'd' || str[i+1] == 'D') && strings.IndexByte("89abcdefABCDEF", str[i+2]) >= 0 {
				return false // a surrogate, paired or not
			}
		case c == 0x7f:
			return false
		case c == 0xc2 && i+1 < len(str) && str[i+1] >= 0x80 && str[i+1] <= 0x9f:
			return false // C1
		case c == 0xef && i+2 < len(str) && str[i+1] == 0xbf && (str[i+2] == 0xbe || str[i+2] == 0xbf):
			return false // U+FFFE, U+FFFF
		case c == 0xe2 && i+2 < len(str) && str[i+1] == 0x80 && (str[i+2] == 0xa8 || str[i+2] == 0xa9):
			return false // U+2028, U+2029: line breaks to YAML, folded to a space
		case c == 0xef && i+2 < len(str) && str[i+1] == 0xbb && str[i+2] == 0xbf:
			return false // U+FEFF: the yaml package may skip a character after one
		}
	}
	return true
}

// appendYAMLString appends the JSON string str written again as a
// double-quoted string YAML reads as JSON.parse would read str (a lone
// surrogate, which Go cannot hold, becomes U+FFFD).
func appendYAMLString(out, str []byte) []byte {
	var s string
	if json.Unmarshal(str, &s) != nil {
		return append(out, str...)
	}
	out = append(out, '"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			out = append(out, '\\', byte(r))
		case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffe || r == 0xffff:
			out = fmt.Appendf(out, "\\u%04x", r)
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return append(out, '"')
}
