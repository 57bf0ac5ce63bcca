package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/contextd/contextd/internal/redact"
)

// topKeys and serverKeys are the keys contextd reads, from the yaml tags of
// file and serverFile.
var (
	topKeys    = yamlKeys(file{})
	serverKeys = yamlKeys(serverFile{})
	// securityKeys are the keys of the mappings under auth and tls.
	// The embedder's mapping is checked as strictly.
	securityKeys = map[string][]string{"auth": yamlKeys(authFile{}), "tls": yamlKeys(tlsFile{}), "embedder": yamlKeys(embedderFile{})}
)

func yamlKeys(v any) []string {
	t := reflect.TypeOf(v)
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		k, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		switch {
		case k != "":
			keys = append(keys, k)
		case opts == "inline":
			keys = append(keys, yamlKeys(reflect.New(t.Field(i).Type).Elem().Interface())...)
		}
	}
	return keys
}

// clientKeys are the top-level keys a client of the daemon reads
// (LoadClient).
var clientKeys = []string{"listen", "auth", "tls"}

// checkKeys walks a parsed file's top-level mapping and each server's
// mapping. It returns a warning for each key contextd does not read, and an
// error for each that looks like a misspelling of one it does (suggest),
// all of them joined, so one run names every key to fix. It sees each mapping as the decoder does (pairs), so servers
// reached through an alias or a merge key are checked too, and a merge key
// is not mistaken for a key or a server. For a client (clientOnly), only
// keys that look like listen, auth or tls, and keys inside auth and tls,
// are errors; servers are not checked.
func checkKeys(doc *yaml.Node, clientOnly bool) (warnings []string, err error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil // empty
	}
	var errs []error
	defer func() {
		if len(errs) > 0 {
			warnings, err = nil, joinCapped(errs)
		}
	}()
	for _, kv := range pairs(doc.Content[0]) {
		k, v := kv[0], kv[1]
		if !slices.Contains(topKeys, k.Value) {
			if want := suggest(k.Value, topKeys); want != "" {
				err := fmt.Errorf("line %d: key %s is not one contextd reads; did you mean %q?", k.Line, keyShown(k.Value), want)
				if clientOnly && !slices.Contains(clientKeys, want) {
					// Only the daemon reads it; a client must still reach
					// a daemon that refused the file, to be told why.
					warnings = append(warnings, err.Error()+" (the daemon refuses the file; clients read only listen, auth and tls)")
					continue
				}
				errs = append(errs, err)
				continue
			}
			if authLike(k, v) {
				// The daemon's token written where contextd does not read
				// it: ignoring it would leave the daemon open.
				errs = append(errs, fmt.Errorf("line %d: key %s is not one contextd reads; the daemon's token goes in auth.token or auth.token_file", k.Line, keyShown(k.Value)))
				continue
			}
			warnings = append(warnings, fmt.Sprintf("line %d: key %s is ignored (not one contextd reads)", k.Line, keyShown(k.Value)))
			continue
		}
		if keys, ok := securityKeys[k.Value]; ok {
			if k.Value == "auth" && isNull(v) {
				// "auth:" with its token line commented out, or an alias to
				// nothing: running without a token would leave the daemon
				// open.
				errs = append(errs, fmt.Errorf("line %d: field auth is empty; set token or token_file, or remove auth to run without a token", k.Line))
				continue
			}
			if k.Value == "tls" && (isNull(v) || emptyMapping(v)) {
				// "tls:" with its lines commented out: serving plain text
				// where the operator wrote TLS would send the token and
				// every answer in the clear.
				errs = append(errs, fmt.Errorf("line %d: field tls is empty; set cert_file and key_file (or, for clients, ca_file), or remove tls to serve without TLS", k.Line))
				continue
			}
			// An unread key here is an error, never a warning: a misspelt
			// auth key would leave the daemon open.
			for _, kv := range pairs(v) {
				if (k.Value == "auth" || k.Value == "tls") && slices.Contains(keys, kv[0].Value) && (isNull(kv[1]) || kv[1].Kind == yaml.ScalarNode && kv[1].Value == "") {
					// An empty client_ca_file turns client certificates
					// off, an empty token the token: both leave the daemon
					// open.
					errs = append(errs, fmt.Errorf("line %d: field %s.%s is empty; give it a value or remove it", kv[0].Line, k.Value, kv[0].Value))
					continue
				}
				if !slices.Contains(keys, kv[0].Value) {
					msg := fmt.Sprintf("line %d: field %s.%s is not one contextd reads", kv[0].Line, k.Value, keyBare(kv[0].Value))
					if want := suggest(kv[0].Value, keys); want != "" {
						msg += fmt.Sprintf("; did you mean %q?", want)
					}
					errs = append(errs, errors.New(msg))
				}
			}
			continue
		}
		if clientOnly || k.Value != "mcpServers" && k.Value != "servers" {
			continue
		}
		for _, s := range pairs(v) {
			if s[0].ShortTag() == "!!null" {
				// The decoder drops a null key, and the server with it.
				errs = append(errs, fmt.Errorf("line %d: server name %s is YAML's null; quote it to use it as a name", s[0].Line, s[0].Value))
				continue
			}
			w, err := checkServer(s[0].Value, s[1])
			if err != nil {
				errs = append(errs, err)
			}
			warnings = append(warnings, w...)
		}
	}
	return warnings, nil
}

// serverLists turns mcpServers or servers written as a list of servers
// each with a name, as in Continue's config.yaml, into the mapping from
// name to server that contextd reads, in doc itself; it reports whether it
// changed doc. A list it cannot read so (an item without a name, a name
// twice) is an error: the decoder's own would name Go types.
func serverLists(doc *yaml.Node) (bool, error) {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return false, nil
	}
	changed := false
	top := doc.Content[0]
	for i := 0; top.Kind == yaml.MappingNode && i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if (k.Value != "mcpServers" && k.Value != "servers") || v == nil || v.Kind != yaml.SequenceNode {
			continue
		}
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: v.Line, Column: v.Column}
		seen := map[string]int{}
		for _, item := range v.Content {
			if item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			name, rest := -1, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: item.Line, Column: item.Column}
			if item.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(item.Content); j += 2 {
					if item.Content[j].Value == "name" && item.Content[j+1].Kind == yaml.ScalarNode && item.Content[j+1].Value != "" {
						name = j
						continue
					}
					rest.Content = append(rest.Content, item.Content[j], item.Content[j+1])
				}
			}
			if name < 0 {
				return false, fmt.Errorf("line %d: field %s: a list whose item has no name; want each item to have one (as in Continue's config.yaml), or a mapping from each server's name to its command or url, as in Claude Desktop's file", item.Line, k.Value)
			}
			nameNode := item.Content[name+1]
			if at, dup := seen[nameNode.Value]; dup {
				return false, fmt.Errorf("line %d: field %s: server %q is named twice (first at line %d)", nameNode.Line, k.Value, nameNode.Value, at)
			}
			seen[nameNode.Value] = nameNode.Line
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: nameNode.Value, Line: nameNode.Line, Column: nameNode.Column}, rest)
		}
		top.Content[i+1] = m
		changed = true
	}
	return changed, nil
}

// checkServer checks one server's mapping as checkKeys does; the keys of
// mappings it merges (<<: *defaults) count as the server's own.
func checkServer(name string, s *yaml.Node) (warnings []string, err error) {
	var errs []error
	for _, kv := range pairs(s) {
		key := kv[0]
		if slices.Contains(serverKeys, key.Value) {
			continue
		}
		if want := suggest(key.Value, serverKeys); want != "" {
			errs = append(errs, fmt.Errorf("server %q: line %d: field %s is not one contextd reads; did you mean %q?", name, key.Line, keyShown(key.Value), want))
			continue
		}
		if n := normalKey(key.Value); n == "authtoken" || n == "tokenfile" || n == "authtokenfile" || n == "auth" && holdsToken(kv[1], 1) {
			errs = append(errs, fmt.Errorf("server %q: line %d: field %s is not one contextd reads; the daemon's token goes in the top-level auth.token, a server's credential in its headers or env", name, key.Line, keyShown(key.Value)))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("server %q: line %d: field %s is ignored (not one contextd reads)", name, key.Line, keyShown(key.Value)))
	}
	return warnings, joinCapped(errs)
}

// authLike reports whether an unread top-level key k (with value v) looks
// like the daemon's token written in the wrong place: a key named as a
// token ("token", "auth_token", "tokenFile", "bearer_token"), or a mapping
// holding one ("security: {token: …}"), or holding an auth mapping that
// holds one ("serve: {auth: {token: …}}"). Hosts' own keys that merely
// mention auth or tokens ("selectedAuthType", "oauthAccount",
// "security: {auth: {selectedType: …}}", "max_tokens") are not.
func authLike(k, v *yaml.Node) bool {
	n := normalKey(k.Value)
	// At the top, any key ending in "token" ("CONTEXTD_TOKEN",
	// "daemon_token") or an "authorization" is one; nested, only the
	// names tokenKey knows (an anchor holding "GITHUB_TOKEN" is a
	// server's).
	if markedForeign(k.Value) && v != nil && v.Anchor != "" {
		// A compose-style holder ("x-github-token: &ght ${GITHUB_TOKEN}")
		// names a value for servers to reuse, not the daemon's token.
		return false
	}
	return tokenKey(k.Value) || strings.HasSuffix(n, "token") || n == "authorization" || holdsToken(v, 2)
}

// tokenKey reports whether a key names the daemon's token.
func tokenKey(k string) bool {
	switch normalKey(k) {
	case "token", "authtoken", "tokenfile", "authtokenfile", "bearertoken", "apitoken", "accesstoken":
		return true
	}
	return false
}

// holdsToken reports whether v is a mapping holding a token key, or (down
// to depth mappings) an "auth" mapping that does.
func holdsToken(v *yaml.Node, depth int) bool {
	if v != nil && v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	if v == nil || v.Kind != yaml.MappingNode || depth == 0 {
		return false
	}
	for _, kv := range pairs(v) {
		if tokenKey(kv[0].Value) || normalKey(kv[0].Value) == "auth" && holdsToken(kv[1], depth-1) {
			return true
		}
	}
	return false
}

// emptyMapping reports whether v is a mapping with no keys of its own or
// merged (an alias to one, or {<<: *empty}, included).
func emptyMapping(v *yaml.Node) bool {
	if v != nil && v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	return v != nil && v.Kind == yaml.MappingNode && len(pairs(v)) == 0
}

// isNull reports whether v is YAML's null (an alias to one included).
func isNull(v *yaml.Node) bool {
	if v != nil && v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	return v == nil || v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null"
}

// normalKey returns k in lower case without "_" and "-".
func normalKey(k string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(k))
}

// maxKeyErrors bounds the misspelt keys one error names.
const maxKeyErrors = 10

// joinCapped joins the first maxKeyErrors of errs, one per line, and says
// how many more there are; nil when errs is empty.
func joinCapped(errs []error) error {
	if len(errs) > maxKeyErrors {
		errs = append(errs[:maxKeyErrors:maxKeyErrors], fmt.Errorf("and %d more", len(errs)-maxKeyErrors))
	}
	return errors.Join(errs...)
}

// pairs returns the key and value nodes of mapping n as the decoder sees
// them: an alias (*a) is followed, and a merge key (<<: *a or
// <<: [*a, *b]) is replaced by the pairs of the mappings it merges, less
// those whose key n, or a mapping merged before, already has (that one
// wins). It returns nil when n is not a mapping.
func pairs(n *yaml.Node) [][2]*yaml.Node {
	return mergedPairs(n, map[*yaml.Node]bool{})
}

// mergedPairs is pairs, skipping the mappings in visited: a mapping merged
// a second time adds no key the first did not, and skipping it keeps a
// small file of aliases to aliases (<<: [*a, *a, …]) from costing
// exponential time, or a cycle from never ending.
func mergedPairs(n *yaml.Node, visited map[*yaml.Node]bool) [][2]*yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && !visited[n] {
		visited[n] = true
		n = n.Alias
	}
	if n == nil || n.Kind != yaml.MappingNode || visited[n] {
		return nil
	}
	visited[n] = true
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMerge(n.Content[i]) {
			seen[n.Content[i].Value] = true
		}
	}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !isMerge(k) {
			out = append(out, [2]*yaml.Node{k, v})
			continue
		}
		merged := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			merged = v.Content
		}
		for _, m := range merged {
			for _, kv := range mergedPairs(m, visited) {
				if !seen[kv[0].Value] {
					seen[kv[0].Value] = true
					out = append(out, kv)
				}
			}
		}
	}
	return out
}

// isMerge reports whether k is a YAML merge key (<<), as the decoder
// decides it: a quoted "<<" is an ordinary key.
func isMerge(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!" || k.ShortTag() == "!!merge")
}

// suggest returns the key in known that k is most likely a misspelling of:
// a common abbreviation of it (cmd for command), the same letters in another
// case or with "_" and "-" moved, or at most one edit away (two for keys of
// eight or more letters, not counting "_" and "-"), by Damerau–Levenshtein
// distance over lower-case letters, or, for keys of eight or more letters,
// the key with up to three letters more. It returns "" when none is that close,
// and for a key marked as not a setting (markedForeign).
func suggest(k string, known []string) string {
	if markedForeign(k) {
		return ""
	}
	if want, ok := abbreviations[strings.ToLower(k)]; ok && slices.Contains(known, want) {
		return want
	}
	best, bestD := "", 0
	for _, want := range known {
		limit := 1
		if len(normKey(want)) >= 8 {
			limit = 2
		}
		d := editDistance(normKey(k), normKey(want))
		if d <= limit && (best == "" || d < bestD) {
			best, bestD = want, d
		}
	}
	if best == "" {
		// A long key with a few letters more in the middle
		// (polling_interval for poll_interval).
		for _, want := range known {
			nk, nw := normKey(k), normKey(want)
			if len(nw) >= 8 && len(nk)-len(nw) <= 3 && isSubsequence(nw, nk) {
				return want
			}
		}
	}
	return best
}

// isSubsequence reports whether a's bytes appear in b in order.
func isSubsequence(a, b string) bool {
	i := 0
	for j := 0; j < len(b) && i < len(a); j++ {
		if a[i] == b[j] {
			i++
		}
	}
	return i == len(a)
}

// abbreviations maps short forms people write for a key to the key; by
// edit distance alone cmd would suggest cwd.
var abbreviations = map[string]string{"cmd": "command", "argv": "args", "environment": "env"}

var keySeparators = strings.NewReplacer("_", "", "-", "")

// normKey lower-cases k and drops "_" and "-".
func normKey(k string) string { return keySeparators.Replace(strings.ToLower(k)) }

// markedForeign reports whether k starts with something other than a
// letter or with "x-": the way a person marks a key as no setting in a file
// without comments, such as "_command" for a command switched off, "_comment",
// "$schema" or an "x-defaults" that holds YAML anchors. Such a key is never
// a misspelling, though once "_" and "-" are dropped it may spell one.
func markedForeign(k string) bool {
	r, _ := utf8.DecodeRuneInString(k)
	return !unicode.IsLetter(r) || len(k) > 1 && (k[0] == 'x' || k[0] == 'X') && (k[1] == '-' || k[1] == '_')
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

// keyName matches a key that is only a name.
var keyName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// keyShown returns a key as a warning or error quotes it: a name quoted,
// anything else (a value typed into the key, "token:KEY", "token KEY")
// not at all, since it would be shown wherever the message goes (a
// refused reload's log, the MCP host's log).
func keyShown(k string) string {
	if plainKey(k) {
		return strconv.Quote(k)
	}
	return "(a name holding a value? not quoted)"
}

// keyBare is keyShown without quotes, for a dotted field ("auth.tokn").
func keyBare(k string) string {
	if plainKey(k) {
		return k
	}
	return "(a name holding a value? not quoted)"
}

func plainKey(k string) bool {
	return keyName.MatchString(k) && !redact.TokenShaped(k) && !redact.Generated(k)
}
