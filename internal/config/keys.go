package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// topKeys and serverKeys are the keys contextd reads, from the yaml tags of
// file and serverFile.
var (
	topKeys    = yamlKeys(file{})
	serverKeys = yamlKeys(serverFile{})
)

func yamlKeys(v any) []string {
	t := reflect.TypeOf(v)
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// checkKeys walks a parsed file's top-level mapping and each server's
// mapping. It returns a warning for each key contextd does not read, and an
// error for the first that looks like a misspelling of one it does
// (suggest).
func checkKeys(doc *yaml.Node) (warnings []string, err error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil // empty, or a shape the typed decode already judged
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i].Value, top.Content[i+1]
		if !slices.Contains(topKeys, k) {
			if want := suggest(k, topKeys); want != "" {
				return nil, fmt.Errorf("line %d: key %q is not one contextd reads; did you mean %q?", top.Content[i].Line, k, want)
			}
			warnings = append(warnings, fmt.Sprintf("line %d: key %q is ignored (not one contextd reads)", top.Content[i].Line, k))
			continue
		}
		if (k != "mcpServers" && k != "servers") || v.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(v.Content); j += 2 {
			w, err := checkServer(v.Content[j].Value, v.Content[j+1], 0)
			if err != nil {
				return nil, err
			}
			warnings = append(warnings, w...)
		}
	}
	return warnings, nil
}

// checkServer checks one server's mapping as checkKeys does, following
// aliases (b: *a) and YAML merge keys (<<: *defaults), whose keys count as
// the server's own. depth bounds alias chains.
func checkServer(name string, s *yaml.Node, depth int) (warnings []string, err error) {
	if depth > 8 {
		return nil, nil
	}
	switch s.Kind {
	case yaml.AliasNode:
		return checkServer(name, s.Alias, depth+1)
	case yaml.SequenceNode: // <<: [*a, *b]
		for _, m := range s.Content {
			w, err := checkServer(name, m, depth+1)
			if err != nil {
				return nil, err
			}
			warnings = append(warnings, w...)
		}
		return warnings, nil
	case yaml.MappingNode:
	default:
		return nil, nil
	}
	for l := 0; l+1 < len(s.Content); l += 2 {
		key := s.Content[l]
		switch {
		case key.Value == "<<" && key.Tag == "!!merge":
			w, err := checkServer(name, s.Content[l+1], depth+1)
			if err != nil {
				return nil, err
			}
			warnings = append(warnings, w...)
		case slices.Contains(serverKeys, key.Value):
		default:
			if want := suggest(key.Value, serverKeys); want != "" {
				return nil, fmt.Errorf("server %q: line %d: field %q is not one contextd reads; did you mean %q?", name, key.Line, key.Value, want)
			}
			warnings = append(warnings, fmt.Sprintf("server %q: line %d: field %q is ignored (not one contextd reads)", name, key.Line, key.Value))
		}
	}
	return warnings, nil
}

// suggest returns the key in known that k is most likely a misspelling of:
// the same letters in another case or with "_" and "-" moved, or at most
// one edit away (two for keys of eight or more letters), by Damerau–
// Levenshtein distance over lower-case letters. It returns "" when none is
// that close.
func suggest(k string, known []string) string {
	norm := func(s string) string {
		return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(s))
	}
	best, bestD := "", 0
	for _, want := range known {
		limit := 1
		if len(want) >= 8 {
			limit = 2
		}
		d := editDistance(norm(k), norm(want))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = want, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b
// (insertions, deletions, substitutions and transpositions of adjacent
// bytes, each costing 1).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
