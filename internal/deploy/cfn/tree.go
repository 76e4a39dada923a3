package cfn

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// The template is built as a tree of these nodes, then written as YAML
// (template.yaml: short-form intrinsics, comments, a stable order) or as
// JSON values (the CDK app's, and the tests'). A leaf is a string, an int,
// a float64 or a bool.
type (
	// Map is a mapping whose keys keep their order; a key may carry a
	// comment, written above it.
	Map struct {
		keys     []string
		vals     []any
		comments []string
	}
	// Seq is a sequence.
	Seq []any
	// Fn is an intrinsic function: Ref, Fn::GetAtt ("Id.Attr"), Fn::Join,
	// Fn::Sub, Fn::If, Fn::Select, Fn::Split, and in conditions
	// Fn::Equals, Fn::Not, Condition.
	Fn struct {
		Name string
		Arg  any
	}
	// Str is a string written quoted (a number or a boolean's text that
	// must stay a string, as an environment variable's "10").
	Str string
	// Noted is an element of a sequence with a comment written above it.
	Noted struct {
		Note string
		V    any
	}
)

// M builds a map from key, value pairs.
func M(kv ...any) *Map {
	m := &Map{}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(kv[i].(string), kv[i+1])
	}
	return m
}

// Set adds (or replaces) key; a nil value is not added.
func (m *Map) Set(key string, v any) *Map { return m.SetNote(key, v, "") }

// SetNote adds key with a comment written above it.
func (m *Map) SetNote(key string, v any, note string) *Map {
	if v == nil {
		return m
	}
	for i, k := range m.keys {
		if k == key {
			m.vals[i], m.comments[i] = v, note
			return m
		}
	}
	m.keys, m.vals, m.comments = append(m.keys, key), append(m.vals, v), append(m.comments, note)
	return m
}

// Get is key's value, nil when absent.
func (m *Map) Get(key string) any {
	for i, k := range m.keys {
		if k == key {
			return m.vals[i]
		}
	}
	return nil
}

// Keys are the map's keys, in order.
func (m *Map) Keys() []string { return append([]string(nil), m.keys...) }

// Len is the number of keys.
func (m *Map) Len() int { return len(m.keys) }

// JSON converts a node to JSON values: maps, slices, strings, numbers and
// booleans, intrinsics in their long form ({"Ref": …}, {"Fn::GetAtt":
// [id, attr]}), as CloudFormation reads a JSON template.
func JSON(n any) any {
	switch x := n.(type) {
	case *Map:
		out := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			out[k] = JSON(x.vals[i])
		}
		return out
	case Seq:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = JSON(e)
		}
		return out
	case Fn:
		if x.Name == "Fn::GetAtt" {
			if s, ok := x.Arg.(string); ok {
				id, attr, _ := strings.Cut(s, ".")
				return map[string]any{x.Name: []any{id, attr}}
			}
		}
		return map[string]any{x.Name: JSON(x.Arg)}
	case Str:
		return string(x)
	case Noted:
		return JSON(x.V)
	case int:
		return float64(x)
	}
	return n
}

// MarshalJSON writes the template as JSON (keys sorted).
func (t *Template) MarshalJSON() ([]byte, error) { return json.Marshal(JSON(t.root)) }

// YAML writes the template as template.yaml is: its header comment, then
// the tree, two-space indented, small mappings and sequences on one line.
func (t *Template) YAML() ([]byte, error) {
	var b bytes.Buffer
	for _, l := range strings.Split(strings.TrimRight(t.header, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{node(t.root, 0)}}); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return spaced(b.String(), t.groups), nil
}

// spaced adds a blank line before each section and before each resource
// in groups (the first of a function's, a queue's… resources), above its
// comment; yaml.v3 writes none.
func spaced(doc string, groups map[string]bool) []byte {
	var out []string
	comments, resources := -1, false
	for i, l := range strings.Split(strings.TrimRight(doc, "\n"), "\n") {
		text := strings.TrimLeft(l, " ")
		indent := len(l) - len(text)
		if strings.HasPrefix(text, "#") {
			if comments < 0 {
				comments = len(out)
			}
			out = append(out, l)
			continue
		}
		key, _, _ := strings.Cut(text, ":")
		if indent == 0 {
			resources = key == "Resources"
		}
		if i > 0 && (indent == 0 || indent == 2 && resources && groups[key]) {
			at := len(out)
			if comments >= 0 {
				at = comments
			}
			if at > 0 && out[at-1] != "" && !strings.HasSuffix(out[at-1], ":") {
				out = append(out[:at], append([]string{""}, out[at:]...)...)
			}
		}
		comments = -1
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n") + "\n")
}

// flowMax is the longest a mapping or sequence may be written on one line.
const flowMax = 100

// node converts a tree node to a yaml.Node; indent is its column, for
// deciding what fits on one line.
func node(n any, indent int) *yaml.Node {
	switch x := n.(type) {
	case *Map:
		y := &yaml.Node{Kind: yaml.MappingNode}
		for i, k := range x.keys {
			kn := &yaml.Node{Kind: yaml.ScalarNode, Value: k}
			if x.comments[i] != "" {
				kn.HeadComment = comment(x.comments[i], 80-indent)
			}
			y.Content = append(y.Content, kn, node(x.vals[i], indent+2))
		}
		if fits(n, indent) {
			y.Style = yaml.FlowStyle
		}
		return y
	case Seq:
		y := &yaml.Node{Kind: yaml.SequenceNode}
		for _, e := range x {
			y.Content = append(y.Content, node(e, indent+2))
		}
		if fits(n, indent) {
			y.Style = yaml.FlowStyle
		}
		return y
	case Fn:
		short := strings.TrimPrefix(x.Name, "Fn::")
		a := node(x.Arg, indent)
		if a.Kind == yaml.SequenceNode && fits(x, indent) {
			a.Style = yaml.FlowStyle
		}
		a.Tag = "!" + short
		if a.Kind == yaml.ScalarNode {
			a.Style = 0
			if x.Name == "Fn::Sub" {
				a.Style = yaml.DoubleQuotedStyle
				if strings.Contains(a.Value, "\n") {
					a.Style = yaml.LiteralStyle
				}
			}
		}
		return a
	case Noted:
		n := node(x.V, indent)
		n.HeadComment = comment(x.Note, 80-indent)
		return n
	case Str:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(x)}
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: x}
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(x, 'f', -1, 64)}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}
	}
	panic(fmt.Sprintf("cfn: no YAML for %T", n))
}

// comment wraps a note into comment lines of at most width characters.
func comment(note string, width int) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(note) {
		if line != "" && len(line)+1+len(w) > width-2 {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return "# " + strings.Join(lines, "\n# ")
}

// fits reports whether a map or sequence of scalars goes on one line.
func fits(n any, indent int) bool {
	size, ok := flat(n)
	return ok && indent+size <= flowMax
}

// flat is a node's length written on one line, and false when it holds a
// comment, a long string or a map or sequence nested twice.
func flat(n any) (int, bool) {
	switch x := n.(type) {
	case *Map:
		total := 2
		for i, k := range x.keys {
			if x.comments[i] != "" {
				return 0, false
			}
			v, ok := flat(x.vals[i])
			if !ok {
				return 0, false
			}
			total += len(k) + 2 + v + 2
		}
		return total, true
	case Seq:
		total := 2
		for _, e := range x {
			v, ok := flat(e)
			if !ok {
				return 0, false
			}
			total += v + 2
		}
		return total, true
	case Fn:
		v, ok := flat(x.Arg)
		return len(x.Name) + 2 + v, ok
	case Str:
		return len(x) + 2, true
	case string:
		return len(x) + 2, !strings.Contains(x, "\n")
	case int, float64, bool:
		return len(fmt.Sprint(x)), true
	}
	return 0, false
}
