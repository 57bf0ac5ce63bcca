package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tailscale/hujson"
	"go.yaml.in/yaml/v3"
)

// standardizeJSON returns data with the comments and trailing commas of
// JSON with comments (VS Code's and Cursor's mcp.json) blanked out, so
// that it reads as JSON (and so as YAML), when data looks like JSON (its
// first byte past a byte order mark, spaces and comments is "{"). hujson
// replaces each removed byte by a space, so every line and column stays
// where it was in the file, and the positions of later errors are the
// file's; a byte order mark is dropped. When data does not parse as JSON
// with comments it is returned as it is, with the parse error (which gives
// its line and column): it may still be YAML in flow style. JSON nested
// deeper than maxFileDepth is an error wrapping errTooDeep (hujson parses
// by recursion: a file of a million "[" ended the process).
func standardizeJSON(data []byte) ([]byte, error) {
	body := bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if i := skipComments(body); i >= len(body) || body[i] != '{' {
		return data, nil
	}
	data = body
	if d := jsonDepth(data); d > maxFileDepth {
		return data, fmt.Errorf("%w: the JSON nests deeper than %d", errTooDeep, maxFileDepth)
	}
	if json.Valid(data) {
		return data, nil // already standard, and checked far faster than hujson parses
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		// hujson wants a line comment ended by a newline, even the last.
		data = append(data[:len(data):len(data)], '\n')
	}
	std, err := hujson.Standardize(data)
	if err != nil {
		return data, err
	}
	return std, nil
}

// maxFileDepth bounds how deeply a JSON configuration nests: a host's file
// nests a few levels; YAML refuses past 10,000 anyway.
const maxFileDepth = 1000

var errTooDeep = errors.New("nested too deeply")

// skipComments returns the index of data's first byte that is not a
// space or part of a // or /* */ comment.
func skipComments(data []byte) int {
	i := 0
	for i < len(data) {
		switch {
		case data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n':
			i++
		case bytes.HasPrefix(data[i:], []byte("//")):
			if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				return len(data)
			}
		case bytes.HasPrefix(data[i:], []byte("/*")):
			if j := bytes.Index(data[i+2:], []byte("*/")); j >= 0 {
				i += 2 + j + 2
			} else {
				return len(data)
			}
		default:
			return i
		}
	}
	return i
}

// jsonDepth returns how deeply arrays and objects nest in data, JSON with
// comments or not (strings and comments skipped as hujson reads them).
func jsonDepth(data []byte) int {
	d, most := 0, 0
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '/':
			if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(data)
			}
		case c == '/' && i+1 < len(data) && data[i+1] == '*':
			if j := bytes.Index(data[i+2:], []byte("*/")); j >= 0 {
				i += 2 + j + 1
			} else {
				i = len(data)
			}
		case c == '{' || c == '[':
			d++
			most = max(most, d)
		case c == '}' || c == ']':
			d--
		}
	}
	return most
}

// jsonSyntaxError reports a JSON file that does not parse, at the line and
// column hujson found.
func jsonSyntaxError(path string, err error) error {
	return fmt.Errorf("%s: %w: %s", path, ErrInvalid, strings.TrimPrefix(err.Error(), "hujson: "))
}

// unknownAnchor matches the yaml package's error for an alias of an
// anchor not defined.
var unknownAnchor = regexp.MustCompile(`unknown anchor '(.*)' referenced`)

// checkTags refuses a value YAML reads with a tag of the file's own
// ("!…", not the standard "!!…"): an unquoted password such as
// "!Pa55w0rd" is read as the tag "!Pa55w0rd" on an empty value, so a
// header or env entry became "" without a word. The value is named by its
// line and key only.
func checkTags(n *yaml.Node, key string) error {
	if n == nil {
		return nil
	}
	where := ""
	if key != "" {
		where = " of key " + keyShown(key)
	}
	if n.Style&yaml.TaggedStyle != 0 && !plainTags[n.Tag] {
		return fmt.Errorf("line %d: the value%s starts with \"!\", which YAML reads as a tag, leaving the value empty or changed: quote the value", n.Line, where)
	}
	if n.Anchor != "" && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		// "X-Api-Key: &Pa55w0rd": an anchor named by the value, on no value.
		return fmt.Errorf("line %d: the value%s starts with \"&\", which YAML reads as an anchor, leaving the value empty: quote the value", n.Line, where)
	}
	for i, c := range n.Content {
		k := ""
		if n.Kind == yaml.MappingNode && i%2 == 1 {
			k = n.Content[i-1].Value
		}
		if err := checkTags(c, k); err != nil {
			return err
		}
	}
	return nil
}

// plainTags are the tags a configuration may write: YAML's own for the
// kinds of values contextd reads. Others (a tag of the file's own, or
// !!binary, !!null, !!timestamp on a value) change or drop the value.
var plainTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!seq": true, "!!map": true, "!!merge": true}

// yamlLine matches the position in a yaml syntax error: "yaml: line 4: …".
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// maxScanLines bounds the re-parses problemLine makes.
const maxScanLines = 5000

// yamlSyntaxError reports a YAML file that does not parse. The yaml
// package gives the line where the enclosing block starts (the mapping
// a mis-indented line breaks, often line 1), not the line at fault; that
// one is the first line whose addition makes the text fail with the same
// message, and the error names both.
func yamlSyntaxError(path string, data []byte, err error) error {
	if m := unknownAnchor.FindStringSubmatch(err.Error()); m != nil {
		// The anchor's name is the value after "*", which may be a
		// password written unquoted ("*Pa55w0rd"): named by line only.
		line := 0
		if at := bytes.Index(data, []byte("*"+m[1])); at >= 0 {
			line = bytes.Count(data[:at], []byte("\n")) + 1
		}
		return fmt.Errorf("%s: %w: line %d: a value starting with \"*\" is read by YAML as a reference to an anchor, and no anchor of that name is defined: quote the value", path, ErrInvalid, line)
	}
	m := yamlLine.FindStringSubmatch(err.Error())
	if m == nil {
		return syntaxError(path, data, err)
	}
	reported, _ := strconv.Atoi(m[1])
	if at := problemLine(data, reported, m[2]); at > reported {
		hint := ""
		if m[2] == "did not find expected key" {
			hint = ": check this line's indentation"
		}
		return syntaxError(path, data, fmt.Errorf("yaml: line %d: %s%s (the block it breaks starts on line %d)", at, m[2], hint, reported))
	}
	return syntaxError(path, data, err)
}

// problemLine returns the first line L at or after from such that data's
// first L lines fail to parse with msg, or 0.
func problemLine(data []byte, from int, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxScanLines {
		return 0
	}
	for l := max(from, 1); l <= len(lines); l++ {
		var n yaml.Node
		err := yaml.Unmarshal(bytes.Join(lines[:l], nil), &n)
		if err == nil {
			continue
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil && m[2] == msg {
			return l
		}
		return 0 // another error: a block the prefix leaves open
	}
	return 0
}
