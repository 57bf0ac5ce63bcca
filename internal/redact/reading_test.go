package redact

import "testing"

// reading in display order is skeleton, and each of its bytes comes from
// a character of s.
func TestReadingIsSkeleton(t *testing.T) {
	for _, s := range []string{
		"plain", "Ｑｘ7\u200bv \u202eabc\u202c d", "\u202eéx\u0301\n\u202eq", "Mu\u0308ller ꓟisty\u2067\u202e!edaJ\u2069", "\xff\u202e",
	} {
		k, origin := reading(s, true)
		if k != skeleton(s) {
			t.Errorf("reading(%+q) = %+q, skeleton %+q", s, k, skeleton(s))
		}
		if len(origin) != len(k) {
			t.Fatalf("%+q: %d origins for %d bytes", s, len(origin), len(k))
		}
		for _, o := range origin {
			if o < 0 || int(o) >= len(s) {
				t.Errorf("%+q: origin %d", s, o)
			}
		}
	}
}
