package config

import (
	"bytes"
	"encoding/json"
	"slices"
)

// A host's own file can be large for reasons contextd has no part in:
// Claude Code keeps every project's prompt history in ~/.claude.json,
// which grows to tens of megabytes. Decoded whole into YAML nodes (twice),
// 32 MB took 3.5 s and 1.5 GB at every start of `contextd mcp` and every
// reload. Before it is decoded, a JSON file over pruneFrom bytes has its
// bulk blanked: under each top-level key contextd does not read, every
// member value over maxUnreadValue bytes becomes null (and the value
// itself, when it is not an object). What the key checks look at stays:
// every top-level key, the keys of each unread key's object (a token
// written there is refused), and any "auth" member whole. The newlines of
// a blanked value are kept, so every later line keeps its number.
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
	type span struct{ start, end int }
	var blank []span
	members(data, func(key string, start, end int) {
		v := data[start:end]
		if slices.Contains(topKeys, key) || len(v) <= maxUnreadValue {
			return
		}
		if v[0] != '{' {
			blank = append(blank, span{start, end})
			return
		}
		members(v, func(key string, s, e int) {
			if e-s > maxUnreadValue && normalKey(key) != "auth" {
				blank = append(blank, span{start + s, start + e})
			}
		})
	})
	if len(blank) == 0 {
		return data
	}
	out := make([]byte, 0, len(data))
	at := 0
	for _, b := range blank {
		out = append(out, data[at:b.start]...)
		out = append(out, "null"...)
		for range bytes.Count(data[b.start:b.end], []byte("\n")) {
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
		kEnd := skipValue(obj, i)
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
		f(key, start, end)
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
