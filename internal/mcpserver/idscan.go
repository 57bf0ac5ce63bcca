package mcpserver

import (
	"bytes"
	"encoding/json"
)

// idScanner finds the id of a JSON-RPC request in a line fed to it in
// pieces, without holding the line: a message contextd cannot take (one
// over MaxRequestBytes, say) is still answered under its id, so the host
// that sent it is not left waiting for an answer it can match. It follows
// strings and nesting only; whether the line is valid JSON is
// json.Valid's business.
type idScanner struct {
	depth    int
	inString bool
	escape   bool
	// what the string or value being read at depth 1 is
	readingKey bool
	key        []byte // the key being read, up to maxKey bytes
	lastKey    string // the last key read at depth 1
	afterColon bool   // reading the value of lastKey
	value      []byte // the id's value, up to maxIDBytes
	idCount    int
	hasMethod  bool
	started    bool // a byte other than a space was seen
	valueEnded bool // a space came after the id's value began
	broken     bool // not one object, a closing bracket without an opening one, or an id too long or split
}

const (
	maxKey     = 16 // room for "id" and "method" spelled with escapes
	maxIDBytes = 80
)

func (s *idScanner) feed(b []byte) {
	for _, c := range b {
		s.step(c)
	}
}

func (s *idScanner) step(c byte) {
	// The id's value is read at depth 1, after "id":, up to the next
	// comma or closing brace.
	inID := s.depth == 1 && s.afterColon && s.lastKey == "id"
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
		case c == '"':
			s.inString = false
		}
		switch {
		case s.readingKey && s.inString:
			if len(s.key) <= maxKey {
				s.key = append(s.key, c)
			}
		case s.readingKey:
			s.readingKey = false
			s.lastKey = string(s.key)
			if bytes.IndexByte(s.key, '\\') >= 0 {
				// The go-sdk reads the key unescaped.
				var k string
				if json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &k) == nil {
					s.lastKey = k
				}
			}
			s.key = s.key[:0]
			switch s.lastKey {
			case "id":
				s.idCount++
				s.value, s.valueEnded = s.value[:0], false
			case "method":
				s.hasMethod = true
			}
		case inID:
			s.keep(c)
		}
		return
	}
	if !s.started && c != ' ' && c != '\t' && c != '\r' && c != '\n' {
		s.started = true
		if c != '{' {
			s.broken = true // a batch, or not JSON: no request of its own
		}
	}
	switch c {
	case ' ', '\t', '\r', '\n':
		if inID && len(s.value) > 0 {
			s.valueEnded = true
		}
		return
	case '"':
		s.inString = true
		s.readingKey = s.depth == 1 && !s.afterColon
	case '{', '[':
		s.depth++
	case '}', ']':
		if s.depth == 0 {
			s.broken = true
		} else {
			s.depth--
		}
		return
	case ':':
		if s.depth == 1 {
			s.afterColon = true
		}
		return
	case ',':
		if s.depth == 1 {
			s.afterColon = false
		}
		return
	}
	if inID {
		s.keep(c)
	}
}

func (s *idScanner) keep(c byte) {
	if s.valueEnded || len(s.value) >= maxIDBytes {
		s.broken = true
		return
	}
	s.value = append(s.value, c)
}

// requestID returns the id of the request the line held, as JSON, or nil
// when the line was not one whole request object with exactly one id that
// JSON-RPC allows (a string, or an integer of at most 2^53).
func (s *idScanner) requestID() json.RawMessage {
	if s.broken || s.depth != 0 || s.inString || !s.hasMethod || s.idCount != 1 || len(s.value) == 0 {
		return nil
	}
	id := json.RawMessage(append([]byte(nil), s.value...))
	probe, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "x"})
	if code, _ := checkOne(probe); code != 0 {
		return nil
	}
	return id
}
