package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

// decoder strictly decodes a YAML tree into Go values by walking the tree
// against the Go types, following their json tags as encoding/json does.
// It does not stop at the first problem: every unknown or duplicate key
// and every value of the wrong type becomes a Problem with its field path
// and line, the value is left unset, and decoding goes on with the next
// one. Scalars keep their YAML 1.2 meaning (so "yes" is a string).
type decoder struct {
	file     string
	problems []Problem
	// skip are the field paths whose values could not be decoded, or are
	// likely misspelled as an unknown sibling: a validation problem at or
	// under one (such as "Required value") only repeats this decoder's
	// problem.
	skip []string
	// skipExact are the structs holding such a misspelled field: a
	// validation problem with the struct as a whole (such as "set exactly
	// one of") is most likely the typo too.
	skipExact []string
}

// secretFields are the fields whose values are secrets: no problem ever
// shows their value, whatever its YAML type.
var secretFields = map[string]bool{"password": true}

// repeats reports whether a validation problem at a field path of the
// document only repeats a problem the decoder found: the path is at or
// under one of skip, or one of skipExact.
func (d *decoder) repeats(path string) bool {
	return slices.Contains(d.skipExact, path) || slices.ContainsFunc(d.skip, func(s string) bool {
		return path == s || strings.HasPrefix(path, s+".") || strings.HasPrefix(path, s+"[")
	})
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func (d *decoder) add(line int, path, format string, args ...any) {
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Field: path, Message: fmt.Sprintf(format, args...)})
}

// fail records a value that cannot be decoded into its field, which
// stays unset.
func (d *decoder) fail(line int, path, format string, args ...any) {
	d.add(line, path, format, args...)
	d.skip = append(d.skip, path)
	d.skipExact = append(d.skipExact, parent(path))
}

// parent is the field path that holds path: a.b for a.b.c and a.b[0].
func parent(path string) string {
	return path[:max(strings.LastIndexAny(path, ".["), 0)]
}

// decode decodes a document's root mapping into v, a pointer.
func (d *decoder) decode(root *yaml.Node, v any) {
	d.value(root, reflect.ValueOf(v).Elem(), "", root.Line, false)
}

// value decodes n into v. path is v's field path ("" for the document),
// line the line of its key (or of n itself for a list item), and secret
// is true inside a secret field, whose value no problem may show.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, line int, secret bool) {
	if n.Kind == yaml.AliasNode {
		// checkExpansion has bounded what aliases add.
		d.value(n.Alias, v, path, line, secret)
		return
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // null leaves the zero value, as in encoding/json
	}
	if n.Kind == yaml.ScalarNode && !d.scalarValid(n, path, line, secret) {
		return
	}
	t := v.Type()
	if t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		d.unmarshalJSON(n, v.Addr().Interface().(json.Unmarshaler), path, line, secret)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		d.value(n, v.Elem(), path, line, secret)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			d.mismatch(n, t, path, line, secret)
			return
		}
		d.mapping(n, v, path, secret)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.mismatch(n, t, path, line, secret)
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), item.Line, secret)
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode || t.Key().Kind() != reflect.String {
			d.mismatch(n, t, path, line, secret)
			return
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			fp := fmt.Sprintf("%s[%s]", path, k.Value)
			if k.Kind != yaml.ScalarNode || isTyped(k) && k.ShortTag() != "!!int" && k.ShortTag() != "!!bool" {
				d.add(k.Line, path, "a key must be a string")
				continue
			}
			if first, dup := seen[k.Value]; dup {
				d.add(k.Line, fp, "duplicate key %q (first at line %d): remove one", k.Value, first)
				continue
			}
			seen[k.Value] = k.Line
			e := reflect.New(t.Elem()).Elem()
			d.value(val, e, fp, k.Line, secret)
			m.SetMapIndex(reflect.ValueOf(k.Value).Convert(t.Key()), e)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || isTyped(n) {
			d.mismatch(n, t, path, line, secret)
			return
		}
		// Strings, timestamps, binary: the text as written.
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.mismatch(n, t, path, line, secret)
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.mismatch(n, t, path, line, secret)
			return
		}
		v.SetInt(i)
	default:
		// Only a new field of a kind the Node API never had gets here.
		d.fail(line, path, "swdt cannot decode a field of Go type %s: this is a bug in swdt, please report it", t)
	}
}

// restrictedFields are the Kubernetes metadata types the Node API embeds,
// with the only fields of them swdt reads and what to say of any other:
// a field swdt would ignore is refused, so that nobody relies on it.
var restrictedFields = map[reflect.Type]struct {
	fields []string
	hint   string
}{
	reflect.TypeFor[metav1.ObjectMeta](): {v1alpha1.ObjectMetaFields(), "a node's metadata takes only name: remove it"},
	reflect.TypeFor[metav1.ListMeta]():   {nil, "a NodeList's metadata takes no field: remove it (each item has its own metadata.name)"},
}

// mapping decodes a mapping node into a struct: every key must be one of
// its json fields, and appear once.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string, secret bool) {
	fields := structFields(v.Type())
	restricted, isRestricted := restrictedFields[v.Type()]
	if isRestricted {
		for name := range fields {
			if !slices.Contains(restricted.fields, name) {
				delete(fields, name)
			}
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			d.add(k.Line, path, "YAML merge keys (<<) are not supported: write the keys out")
			continue
		}
		fp := join(path, k.Value)
		if first, dup := seen[k.Value]; dup {
			d.add(k.Line, fp, "duplicate key %q (first at line %d): remove one", k.Value, first)
			continue
		}
		seen[k.Value] = k.Line
		f, ok := fields[k.Value]
		switch {
		case !ok && isRestricted:
			d.unknownMetadata(k, fp, restricted.fields, restricted.hint)
			continue
		case !ok:
			d.unknown(k, path, fp, fields)
			continue
		}
		d.value(val, v.FieldByIndex(f.index), fp, k.Line, secret || secretFields[k.Value])
	}
}

// unknown reports a key that is no field of its struct, with the closest
// known field name as a suggestion.
func (d *decoder) unknown(k *yaml.Node, path, fp string, fields map[string]jsonField) {
	msg := fmt.Sprintf("unknown field %q", k.Value)
	if s := suggest(k.Value); s != "" {
		msg += fmt.Sprintf(": did you mean %q?", s)
		if _, sibling := fields[s]; sibling {
			// The field meant is most likely unset because of the typo.
			d.skip = append(d.skip, join(path, s))
			d.skipExact = append(d.skipExact, path)
		}
	}
	d.add(k.Line, fp, "%s", msg)
}

// unknownMetadata reports a metadata field swdt does not read: a typo of
// one it reads gets a suggestion, any other the hint.
func (d *decoder) unknownMetadata(k *yaml.Node, fp string, known []string, hint string) {
	if s := Closest(k.Value, known); s != "" {
		d.add(k.Line, fp, "unknown field %q: did you mean %q?", k.Value, s)
		return
	}
	d.add(k.Line, fp, "unknown field %q: %s", k.Value, hint)
}

// unmarshalJSON decodes a value of a type with its own JSON decoding (such
// as a duration in a future field) through that decoding.
func (d *decoder) unmarshalJSON(n *yaml.Node, u json.Unmarshaler, path string, line int, secret bool) {
	var v any
	err := n.Decode(&v)
	var data []byte
	if err == nil {
		data, err = json.Marshal(v)
	}
	if err == nil {
		err = u.UnmarshalJSON(data)
	}
	switch {
	case err != nil && secret:
		d.fail(line, path, "the value is not valid here (not shown: it is a secret)")
	case err != nil:
		d.fail(line, path, "%s is not valid here: %v", describe(n), err)
	}
}

// scalarValid checks that a scalar tagged !!bool, !!int or !!float (by
// its form or an explicit tag) is one, as a YAML 1.2 parser reads it.
func (d *decoder) scalarValid(n *yaml.Node, path string, line int, secret bool) bool {
	if !isTyped(n) {
		return true
	}
	var v any
	err := n.Decode(&v)
	if err == nil {
		return true
	}
	if secret {
		d.fail(line, path, "the value is not a valid %s (not shown: it is a secret)", n.ShortTag())
	} else {
		d.fail(line, path, "invalid %s: %v", n.ShortTag(), err)
	}
	return false
}

// isTyped reports whether a scalar is a boolean or a number rather than
// text.
func isTyped(n *yaml.Node) bool {
	switch n.ShortTag() {
	case "!!bool", "!!int", "!!float":
		return true
	}
	return false
}

// mismatch records a value of the wrong YAML type for its field.
func (d *decoder) mismatch(n *yaml.Node, t reflect.Type, path string, line int, secret bool) {
	found := describe(n)
	if secret {
		found = describeType(n)
	}
	d.fail(line, path, "must be %s, not %s", describeGoType(t), found)
}

// describeGoType says what YAML a Go type takes.
func describeGoType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string (quote it)"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("a whole number from %d to %d", int64(-1)<<(t.Bits()-1), int64(1)<<(t.Bits()-1)-1)
	case reflect.Slice:
		return "a list"
	default:
		return "a mapping"
	}
}

// jsonField is one json field of a struct.
type jsonField struct {
	// index is the field's index path, through inlined structs.
	index []int
}

// structFields returns the json fields of a struct type by name, with the
// fields of embedded structs that have no json name (inlined, as
// metav1.TypeMeta is) in place.
func structFields(t reflect.Type) map[string]jsonField {
	out := map[string]jsonField{}
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			idx := append(append(make([]int, 0, len(index)+1), index...), i)
			if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = f.Name
			}
			if _, taken := out[name]; !taken {
				out[name] = jsonField{index: idx}
			}
		}
	}
	walk(t, nil)
	return out
}

// join appends a key to a field path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describeType says what kind of value n is without showing it, for
// secrets.
func describeType(n *yaml.Node) string {
	switch {
	case n.Kind != yaml.ScalarNode:
		return describe(n)
	case n.ShortTag() == "!!int" || n.ShortTag() == "!!float":
		return "a number"
	case n.ShortTag() == "!!bool":
		return "a boolean"
	default:
		return "a value of type " + n.ShortTag()
	}
}

// describe says what n is, showing a scalar's text.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	default:
		return "an unsupported YAML node"
	}
}
