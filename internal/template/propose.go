package template

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/contextd/contextd/internal/lexical"
)

// A Query is a task query prepared for Propose: its candidate values and
// the words of each token. Prepare it once and use it for every template.
type Query struct {
	Values []Value
	stems  [][]string // lexical.Tokenize of each token
	words  [][]string // lexical.Tokenize of each value, as Values

	// fits caches Fits for each value, by what Fits reads of a variable:
	// one query is matched against every variable of every template in
	// scope (1,000 templates of 8 variables: 8,000 times per value).
	fits map[fitKey]bool
}

type fitKey struct {
	class    Class
	reserved bool // a '+' or '#' expansion
	value    int  // index into Values
}

// fitsVar is Fits(v, q.Values[i].Text), cached. A Query is not safe for
// concurrent use.
func (q *Query) fitsVar(v Var, i int) bool {
	k := fitKey{class: v.Class, reserved: v.Op == '+' || v.Op == '#', value: i}
	ok, found := q.fits[k]
	if !found {
		if q.fits == nil {
			q.fits = map[fitKey]bool{}
		}
		ok = Fits(v, q.Values[i].Text)
		q.fits[k] = ok
	}
	return ok
}

// ParseQuery extracts a query's values (see Extract) and words.
func ParseQuery(q string) *Query {
	toks := tokens(q)
	out := &Query{Values: Extract(q), stems: make([][]string, len(toks))}
	for _, v := range out.Values {
		out.words = append(out.words, lexical.Tokenize(v.Text))
	}
	for i, t := range toks {
		for _, w := range lexical.Tokenize(t.text) {
			if !lexical.IsStopWord(w) { // Tokenize keeps them in an all-stop-word token ("of")
				out.stems[i] = append(out.stems[i], w)
			}
		}
	}
	return out
}

// A Proposal is one way to fill a template's variables from a query.
type Proposal struct {
	// Values maps each variable given a value to that value.
	Values map[string]string
	// Weak lists the variables (sorted) whose value's shape alone does not
	// make it one: a plain word, or a value for a variable whose name says
	// nothing. Such a proposal may be expanded only when the server's
	// completion confirms those values.
	Weak []string
	// Score orders proposals (higher is better): how well each value's
	// shape fits its variable, plus whether a word of the variable's name
	// or of the template stands next to it ("user 42", "issue ABC-123").
	Score int
}

// maxPerVar is how many candidate values per required variable Propose
// combines; maxCombos bounds the combinations it scores; maxRequired is
// the most required variables a template may have for Propose to fill it
// (a query rarely names more values, and each one multiplies the search);
// maxNodes bounds the partial assignments Propose visits, dead ends
// included.
const (
	maxPerVar   = 3
	maxCombos   = 256
	maxRequired = 8
	maxNodes    = 4096
)

// Propose returns at most max ways to fill t's variables from the query's
// values, best first. Every required variable gets a value that Fits it;
// one value (one token of the query) fills at most one variable; an
// optional variable gets a value only when a word of its name stands next
// to one ("page 2" for {?page}). A word that is itself a word of the
// template ("profile" for users://{id}/profile) is never a value. A
// template with more than 8 required variables gets no proposal. The
// search is bounded: it only extends a partial assignment that the
// remaining candidates can still complete, and it stops after 4,096 steps
// or 256 complete assignments, so its cost does not grow exponentially
// with the variables. Propose neither expands nor confirms anything: see
// Expand and Proposal.Weak.
func (t *Template) Propose(q *Query, max int) []Proposal {
	out, _ := t.propose(q, max)
	return out
}

// propose is Propose; it also returns how many partial assignments it
// visited (calls of fill), which the tests bound.
func (t *Template) propose(q *Query, max int) ([]Proposal, int) {
	if max <= 0 || len(q.Values) == 0 {
		return nil, 0
	}
	if n := len(t.Vars) - t.optionalVars(); n > maxRequired {
		return nil, 0
	}
	type cand struct {
		val   Value
		score int
		weak  bool
	}
	var required []Var
	cands := map[string][]cand{}
	for vi, v := range t.Vars {
		varWords := t.varWords[vi]
		var cs []cand
		for i, val := range q.Values {
			if !q.fitsVar(v, i) || t.isOwnWord(val, q.words[i], varWords) {
				continue
			}
			level := fitLevel(v.Class, val.Kind)
			if level == 0 {
				continue
			}
			nearVar, nearTemplate, after := q.near(val.Pos, varWords, t.anchors)
			var weak bool
			switch {
			case val.Kind == KindWord:
				weak = true // every word of a sentence has a name's shape
			case v.Class == ClassAny:
				weak = !nearVar // "page 3" for {page}
			default:
				weak = level == 1
			}
			if weak && !nearVar && !nearTemplate {
				continue // a word anywhere in the query is no evidence
			}
			if v.Optional && (!nearVar || weak) {
				continue
			}
			s := 2 * level
			if nearVar {
				s += 3
			}
			if nearTemplate {
				s += 2
			}
			if after {
				s++ // "user 42", "issue PROJ-1": the value follows its noun
			}
			cs = append(cs, cand{val: val, score: s, weak: weak})
		}
		slices.SortStableFunc(cs, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
		if v.Optional {
			cands[v.Name] = cs // the best one not used by a required variable
			continue
		}
		if len(cs) == 0 {
			return nil, 0 // a required variable nothing fits
		}
		cands[v.Name] = cs[:min(len(cs), maxPerVar)]
		required = append(required, v)
	}

	// completable reports whether required[i:] can each take a distinct
	// candidate not in used: a bipartite matching (Kuhn's augmenting
	// paths; at most 8 variables of at most 3 candidates each).
	completable := func(i int, used map[int]bool) bool {
		owner := map[int]int{} // token position → index into required
		var augment func(vi int, seen map[int]bool) bool
		augment = func(vi int, seen map[int]bool) bool {
			for _, c := range cands[required[vi].Name] {
				p := c.val.Pos
				if used[p] || seen[p] {
					continue
				}
				seen[p] = true
				if o, taken := owner[p]; !taken || augment(o, seen) {
					owner[p] = vi
					return true
				}
			}
			return false
		}
		for vi := i; vi < len(required); vi++ {
			if !augment(vi, map[int]bool{}) {
				return false
			}
		}
		return true
	}

	var out []keyed
	seen := map[string]bool{}
	values := map[string]string{}
	used := map[int]bool{} // token positions
	var weak []string
	score, combos, nodes := 0, 0, 0
	var fill func(i int)
	fill = func(i int) {
		nodes++
		if combos >= maxCombos || nodes > maxNodes {
			return
		}
		if i == len(required) {
			combos++
			p := Proposal{Values: maps.Clone(values), Weak: slices.Clone(weak), Score: score}
			taken := maps.Clone(used)
			for _, v := range t.Vars {
				if !v.Optional {
					continue
				}
				if i := slices.IndexFunc(cands[v.Name], func(c cand) bool { return !taken[c.val.Pos] }); i >= 0 {
					c := cands[v.Name][i]
					p.Values[v.Name], taken[c.val.Pos] = c.val.Text, true
					p.Score += c.score
				}
			}
			slices.Sort(p.Weak)
			if k := key(p.Values); !seen[k] {
				seen[k] = true
				out = append(out, keyed{p, k})
			}
			return
		}
		v := required[i]
		for _, c := range cands[v.Name] {
			if used[c.val.Pos] {
				continue
			}
			used[c.val.Pos] = true
			if !completable(i+1, used) { // a dead end: the rest cannot be filled
				delete(used, c.val.Pos)
				continue
			}
			values[v.Name], score = c.val.Text, score+c.score
			if c.weak {
				weak = append(weak, v.Name)
			}
			fill(i + 1)
			if c.weak {
				weak = weak[:len(weak)-1]
			}
			delete(used, c.val.Pos)
			delete(values, v.Name)
			score -= c.score
		}
	}
	if completable(0, used) {
		fill(0)
	}
	slices.SortStableFunc(out, func(a, b keyed) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return strings.Compare(a.key, b.key)
	})
	var best []Proposal
	for _, p := range out[:min(len(out), max)] {
		best = append(best, p.Proposal)
	}
	return best, nodes
}

// keyed is a proposal with its values' key (see key), computed once.
type keyed struct {
	Proposal
	key string
}

// optionalVars counts t's optional variables.
func (t *Template) optionalVars() int {
	n := 0
	for _, v := range t.Vars {
		if v.Optional {
			n++
		}
	}
	return n
}

// fitLevel says how well a value of kind k fits a variable of class c:
// 3 its natural shape, 2 an acceptable one, 1 possible only if confirmed
// (weak), 0 never.
func fitLevel(c Class, k Kind) int {
	switch c {
	case ClassID:
		switch k {
		case KindNumber, KindTicket, KindHex:
			return 3
		case KindIdentifier:
			return 2
		case KindQuoted:
			return 1
		}
	case ClassPath:
		switch k {
		case KindPath:
			return 3
		case KindQuoted:
			return 2
		case KindIdentifier: // "Makefile"-like names need confirming
			return 1
		}
	case ClassURL:
		if k == KindURL {
			return 3
		}
	case ClassName:
		switch k {
		case KindIdentifier, KindQuoted:
			return 3
		case KindTicket:
			return 2
		case KindWord, KindNumber, KindHex:
			return 1
		}
	case ClassAny:
		switch k {
		case KindQuoted, KindIdentifier, KindTicket:
			return 2
		case KindNumber, KindHex, KindWord, KindPath, KindURL:
			return 1
		}
	}
	return 0
}

// isOwnWord reports whether a word-like value (ws, its words) is a word of the template or
// of the variable's name ("profile", "user"): it names the template, not a
// value.
func (t *Template) isOwnWord(v Value, ws []string, varWords map[string]bool) bool {
	if v.Kind != KindWord && v.Kind != KindIdentifier {
		return false
	}
	return len(ws) > 0 && !slices.ContainsFunc(ws, func(w string) bool { return !t.anchors[w] && !varWords[w] })
}

// near reports whether a word of the variable's name, or another word of
// the template, is among the closest tokens with words on each side of
// position pos (at most 2 tokens away; stop words are skipped, so "profile
// of user 42" puts "user" next to "42"), and whether such a word is the
// token right before pos.
func (q *Query) near(pos int, varWords, anchors map[string]bool) (nearVar, nearTemplate, after bool) {
	look := func(i int) bool { // reports whether token i has words
		for _, w := range q.stems[i] {
			nearVar = nearVar || varWords[w]
			nearTemplate = nearTemplate || anchors[w]
		}
		return len(q.stems[i]) > 0
	}
	for i, n := pos-1, 0; i >= 0 && n < 2; i-- {
		n++
		if look(i) {
			after = i == pos-1 && (nearVar || nearTemplate)
			break
		}
	}
	for i, n := pos+1, 0; i < len(q.stems) && n < 2; i++ {
		n++
		if look(i) {
			break
		}
	}
	return nearVar, nearTemplate, after
}

func key(m map[string]string) string {
	ks := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range ks {
		b.WriteString(k + "\x00" + m[k] + "\x00")
	}
	return b.String()
}
