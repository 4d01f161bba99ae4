package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	kjson "sigs.k8s.io/json"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

var (
	yamlLineRE     = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)
	strictFieldRE  = regexp.MustCompile(`^(?:json: )?(unknown|duplicate) field "(.*)"$`)
	typeMismatchRE = regexp.MustCompile(`^json: cannot unmarshal (.+) into Go struct field [^.\s]+\.(\S+) of type (\S+)$`)
)

// nodeSource is where a decoded node came from, to find the line of a field.
type nodeSource struct {
	// root is the mapping of the document the node is in.
	root *yaml.Node
	// prefix is the node's path inside the document: "" for a Node
	// document, "items[i]" for an item of a NodeList.
	prefix string
}

// problem builds a Problem for a field path relative to the node. The
// Problem's field is the path inside the document (items[i]. first for a
// NodeList item), as are the paths of decoding problems.
func (s nodeSource) problem(file, node, fieldPath, msg string) Problem {
	full := fieldPath
	if s.prefix != "" {
		full = s.prefix + "." + fieldPath
	}
	return Problem{File: file, Line: lineOf(s.root, full), Node: node, Field: full, Message: msg}
}

// parse decodes, defaults, resolves and validates every document of data.
// dir is the directory relative paths resolve against.
// perm is the file's permission bits, for the password warning.
func parse(file, dir string, data []byte, perm fs.FileMode) (*Result, []Problem) {
	var (
		nodes    []v1alpha1.Node
		sources  []nodeSource
		problems []Problem
	)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// The YAML stream cannot be resumed after a syntax error.
			problems = append(problems, syntaxProblem(file, err))
			break
		}
		if len(doc.Content) == 0 || doc.Content[0].ShortTag() == "!!null" {
			continue // an empty document, for example after a trailing ---
		}
		if p := checkExpansion(file, &doc); p != nil {
			problems = append(problems, *p)
			continue
		}
		ns, srcs, probs := decodeDocument(file, doc.Content[0])
		nodes = append(nodes, ns...)
		sources = append(sources, srcs...)
		problems = append(problems, probs...)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	if len(nodes) == 0 {
		return nil, []Problem{{File: file, Message: "no nodes: expected a Node document, several separated by ---, or a NodeList with items"}}
	}
	res := &Result{Nodes: nodes}
	for i := range nodes {
		v1alpha1.SetDefaults_Node(&nodes[i])
		for _, p := range resolvePaths(&nodes[i], dir) {
			problems = append(problems, sources[i].problem(file, nodes[i].Name, p.field, p.message))
		}
	}
	problems = append(problems, validate(file, nodes, sources)...)
	if len(problems) > 0 {
		return nil, problems
	}
	for i, n := range nodes {
		if w, ok := passwordWarning(file, perm, &nodes[i], sources[i]); ok {
			res.Warnings = append(res.Warnings, w)
		}
		if n.Spec.Credentials.HostKeyPolicy == v1alpha1.HostKeyPolicyInsecure {
			res.Warnings = append(res.Warnings, sources[i].problem(file, n.Name, "spec.credentials.hostKeyPolicy",
				"insecure accepts any host key, so a man in the middle goes unnoticed: prefer accept-new"))
		}
	}
	return res, nil
}

func syntaxProblem(file string, err error) Problem {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		// yaml.v3 reports the line where the enclosing block starts, which
		// is at or before the offending line.
		return Problem{File: file, Line: line, Message: "YAML syntax error at or after this line: " + m[2]}
	}
	return Problem{File: file, Message: "YAML syntax error: " + strings.TrimPrefix(msg, "yaml: ")}
}

// decodeDocument checks apiVersion and kind, then strictly decodes one
// document into its nodes.
func decodeDocument(file string, root *yaml.Node) ([]v1alpha1.Node, []nodeSource, []Problem) {
	fail := func(line int, format string, args ...any) ([]v1alpha1.Node, []nodeSource, []Problem) {
		return nil, nil, []Problem{{File: file, Line: line, Message: fmt.Sprintf(format, args...)}}
	}
	if root.Kind != yaml.MappingNode {
		return fail(root.Line, "expected a Node or NodeList document (a mapping with apiVersion and kind), found %s", describe(root))
	}
	want := v1alpha1.SchemeGroupVersion.String()
	apiVersion, kind := mappingValue(root, "apiVersion"), mappingValue(root, "kind")
	switch {
	case apiVersion == nil:
		return fail(root.Line, "apiVersion is missing: set apiVersion: %s", want)
	case apiVersion.Value != want:
		return fail(apiVersion.Line, "apiVersion %q is not supported: use %s", apiVersion.Value, want)
	case kind == nil:
		return fail(root.Line, "kind is missing: set kind: %s or %s", v1alpha1.KindNode, v1alpha1.KindNodeList)
	case kind.Value != v1alpha1.KindNode && kind.Value != v1alpha1.KindNodeList:
		return fail(kind.Line, "kind %q is not supported: use %s or %s", kind.Value, v1alpha1.KindNode, v1alpha1.KindNodeList)
	}

	wrapSingleHealthChecks(root)
	value, problems := toJSONValue(file, root, false)
	if len(problems) > 0 {
		return nil, nil, problems
	}
	data, err := json.Marshal(value)
	if err != nil {
		return fail(root.Line, "cannot convert the document to JSON: %v", err)
	}
	if kind.Value == v1alpha1.KindNode {
		var n v1alpha1.Node
		if problems := strictUnmarshal(file, root, data, &n); len(problems) > 0 {
			return nil, nil, problems
		}
		return []v1alpha1.Node{n}, []nodeSource{{root: root}}, nil
	}
	var l v1alpha1.NodeList
	problems = strictUnmarshal(file, root, data, &l)
	if len(problems) > 0 {
		return nil, nil, problems
	}
	sources := make([]nodeSource, len(l.Items))
	for i := range l.Items {
		src := nodeSource{root: root, prefix: fmt.Sprintf("items[%d]", i)}
		item := &l.Items[i]
		switch {
		case item.APIVersion != "" && item.APIVersion != want:
			problems = append(problems, src.problem(file, item.Name, "apiVersion",
				fmt.Sprintf("apiVersion %q is not supported: use %s", item.APIVersion, want)))
		case item.Kind != "" && item.Kind != v1alpha1.KindNode:
			problems = append(problems, src.problem(file, item.Name, "kind",
				fmt.Sprintf("kind %q is not supported in a NodeList: use %s", item.Kind, v1alpha1.KindNode)))
		}
		item.APIVersion, item.Kind = want, v1alpha1.KindNode
		sources[i] = src
	}
	if len(problems) > 0 {
		return nil, nil, problems
	}
	return l.Items, sources, nil
}

// strictUnmarshal decodes JSON into v, reporting every unknown or duplicate
// field and type mismatches with the line of the YAML source.
func strictUnmarshal(file string, root *yaml.Node, data []byte, v any) []Problem {
	strictErrs, err := kjson.UnmarshalStrict(data, v)
	var problems []Problem
	for _, e := range strictErrs {
		m := strictFieldRE.FindStringSubmatch(e.Error())
		if m == nil {
			problems = append(problems, Problem{File: file, Line: root.Line, Message: e.Error()})
			continue
		}
		msg := m[1] + " field"
		if m[1] == "unknown" {
			msg = "unknown field " + strconv.Quote(lastSegment(m[2]))
			if s := suggest(lastSegment(m[2])); s != "" {
				msg += fmt.Sprintf(": did you mean %q?", s)
			}
		}
		problems = append(problems, Problem{File: file, Line: lineOf(root, m[2]), Field: m[2], Message: msg})
	}
	if err != nil {
		if m := typeMismatchRE.FindStringSubmatch(err.Error()); m != nil {
			line, value := locate(root, m[2])
			found := "a " + m[1]
			switch {
			case value != nil && isSecret(m[2]):
				found = describeType(value)
			case value != nil:
				found = describe(value)
			}
			problems = append(problems, Problem{File: file, Line: line, Field: m[2],
				Message: fmt.Sprintf("must be %s, not %s", describeGoType(m[3]), found)})
		} else {
			problems = append(problems, Problem{File: file, Line: root.Line, Message: "cannot decode: " + err.Error()})
		}
	}
	return problems
}

func describeGoType(t string) string {
	switch {
	case t == "string":
		return "a string (quote it)"
	case t == "bool" || t == "*bool":
		return "true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	default:
		return "a mapping"
	}
}

func lastSegment(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// secretFields are the fields whose values are secrets: no problem ever
// shows their value, whatever its YAML type.
var secretFields = map[string]bool{"password": true}

// isSecret reports whether a field path such as
// items[0].spec.credentials.password names a secret.
func isSecret(fieldPath string) bool { return secretFields[lastSegment(fieldPath)] }

// toJSONValue converts a YAML node into a value encoding/json can marshal,
// keeping every scalar's YAML 1.2 meaning (so "yes" stays a string) and
// reporting duplicate keys. secret is true inside a secret field's value,
// whose text must not appear in a problem.
func toJSONValue(file string, n *yaml.Node, secret bool) (any, []Problem) {
	switch n.Kind {
	case yaml.AliasNode:
		return toJSONValue(file, n.Alias, secret)
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		var problems []Problem
		for _, c := range n.Content {
			v, p := toJSONValue(file, c, secret)
			out = append(out, v)
			problems = append(problems, p...)
		}
		return out, problems
	case yaml.MappingNode:
		out := map[string]any{}
		lines := map[string]int{}
		var problems []Problem
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.ShortTag() == "!!merge" {
				problems = append(problems, Problem{File: file, Line: k.Line, Message: "YAML merge keys (<<) are not supported"})
				continue
			}
			if first, dup := lines[k.Value]; dup {
				problems = append(problems, Problem{File: file, Line: k.Line,
					Message: fmt.Sprintf("duplicate key %q (first at line %d)", k.Value, first)})
				continue
			}
			lines[k.Value] = k.Line
			v, p := toJSONValue(file, val, secret || secretFields[k.Value])
			out[k.Value] = v
			problems = append(problems, p...)
		}
		return out, problems
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, nil
		case "!!bool", "!!int", "!!float":
			var v any
			if err := n.Decode(&v); err != nil {
				msg := fmt.Sprintf("invalid %s: %v", n.ShortTag(), err)
				if secret {
					msg = fmt.Sprintf("the value is not a valid %s (not shown: it is a secret)", n.ShortTag())
				}
				return nil, []Problem{{File: file, Line: n.Line, Message: msg}}
			}
			return v, nil
		default: // strings, timestamps, binary: the text as written
			return n.Value, nil
		}
	}
	return nil, []Problem{{File: file, Line: n.Line, Message: "unsupported YAML node " + describe(n)}}
}

// mappingValue returns the value of key in a mapping node, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// lineOf returns the line of the deepest part of a field path such as
// spec.kubernetes.provisioners[1].destination that exists in root: the
// key's own line when present, else its nearest existing parent's.
func lineOf(root *yaml.Node, path string) int {
	line, _ := locate(root, path)
	return line
}

// locate walks a field path through a YAML tree. It returns the line of the
// deepest part found and the value node when the whole path exists.
func locate(root *yaml.Node, path string) (int, *yaml.Node) {
	n, line := root, root.Line
	for _, seg := range splitPath(path) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		switch {
		case seg.key != "" && n.Kind == yaml.MappingNode:
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg.key {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return line, nil
			}
		case seg.key == "" && n.Kind == yaml.SequenceNode && seg.index < len(n.Content):
			n = n.Content[seg.index]
			line = n.Line
		default:
			return line, nil
		}
	}
	return line, n
}

type pathSegment struct {
	key   string
	index int
}

// splitPath splits a.b[2].c into a, b, [2], c.
func splitPath(path string) []pathSegment {
	var segs []pathSegment
	for _, part := range strings.Split(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			segs = append(segs, pathSegment{key: key})
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(idx)
			if err != nil {
				return segs
			}
			segs = append(segs, pathSegment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
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

// wrapSingleHealthChecks lets a provisioner's healthCheck be one check (as
// DESIGN.md and the SIG Windows schema write it) or a list: a mapping is
// wrapped into a one-item sequence in the YAML tree itself, so strict
// decoding and line numbers work on it unchanged.
func wrapSingleHealthChecks(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			if key.Value == "healthCheck" && value.Kind == yaml.MappingNode {
				n.Content[i+1] = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: value.Line, Column: value.Column, Content: []*yaml.Node{value}}
			}
		}
	}
	for _, c := range n.Content {
		wrapSingleHealthChecks(c)
	}
}
