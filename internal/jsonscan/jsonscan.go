// Package jsonscan measures JSON in raw bytes without decoding it, so that
// a bound on what a message would cost once decoded (every object, array
// and element becomes Go values that take far more than their bytes) can
// be checked before a decoder allocates anything.
package jsonscan

import "bytes"

// Values returns the objects and arrays b opens outside strings plus the
// commas between their members and elements: about the number of values b
// would decode to (an upper bound for the containers and their elements;
// scalars at the top level count 0). It stops counting once the count
// passes limit and returns limit+1, so a hostile input costs at most one
// pass over its bytes. b need not be valid JSON; a string left open runs to
// the end.
func Values(b []byte, limit int) int {
	n := 0
	structure(b, func(c byte, _ int) bool {
		if c == '{' || c == '[' || c == ',' {
			n++
		}
		return n <= limit
	})
	return n
}

// Elements returns how many elements b holds when it is an array (after
// leading whitespace): one more than the commas directly inside it, so
// "[]" counts 1; 0 when b is not an array. Like Values it stops once the
// count passes limit and returns limit+1, and b need not be valid JSON.
func Elements(b []byte, limit int) int {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '[' {
		return 0
	}
	n := 1
	structure(b, func(c byte, depth int) bool {
		if c == ',' && depth == 1 {
			n++
		}
		return n <= limit
	})
	return n
}

// structure calls fn for each '{', '[', '}', ']' and ',' of b outside
// strings, with the nesting depth inside the containers open at that byte
// (after an opening bracket, counting it), until fn returns false.
func structure(b []byte, fn func(c byte, depth int) bool) {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
			continue
		case c == '{', c == '[':
			depth++
		case c == '}', c == ']':
			depth--
		case c != ',':
			continue
		}
		if !fn(c, depth) {
			return
		}
	}
}
