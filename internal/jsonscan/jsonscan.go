// Package jsonscan measures JSON in raw bytes without decoding it, so that
// a bound on what a message would cost once decoded (every object, array
// and element becomes Go values that take far more than their bytes) can
// be checked before a decoder allocates anything.
package jsonscan

// Values returns the objects and arrays b opens outside strings plus the
// commas between their members and elements: about the number of values b
// would decode to (an upper bound for the containers and their elements;
// scalars at the top level count 0). It stops counting once the count
// passes limit and returns limit+1, so a hostile input costs at most one
// pass over its bytes. b need not be valid JSON; a string left open runs to
// the end.
func Values(b []byte, limit int) int {
	n, inString, escaped := 0, false, false
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
		case c == '"':
			inString = true
		case c == '{', c == '[', c == ',':
			if n++; n > limit {
				return n
			}
		}
	}
	return n
}
