package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
)

// yamlLineRE finds the line in a YAML syntax error, the one error that
// comes from the parser rather than from walking the tree.
var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// nodeSource is where a decoded node came from, to find the line of a field.
type nodeSource struct {
	// root is the mapping of the document the node is in.
	root *yaml.Node
	// prefix is the node's path inside the document: "" for a Node
	// document, "items[i]" for an item of a NodeList.
	prefix string
	// dec is the document's decoder, which knows what problems it found.
	dec *decoder
}

// problem builds a Problem for a field path relative to the node. The
// Problem's field is the path inside the document (items[i]. first for a
// NodeList item), as are the paths of decoding problems.
func (s nodeSource) problem(file, node, fieldPath, msg string) Problem {
	full := s.full(fieldPath)
	return Problem{File: file, Line: lineOf(s.root, full), Node: node, Field: full, Message: msg}
}

// full is the path inside the document of a field path relative to the
// node.
func (s nodeSource) full(fieldPath string) string {
	if s.prefix != "" {
		return s.prefix + "." + fieldPath
	}
	return fieldPath
}

// parse decodes, defaults, resolves and validates every document of data,
// and reports every problem of all of them: a document that cannot be
// decoded in full is still defaulted and validated, so that one run lists
// its unknown fields, wrong types and invalid values together. dir is the
// directory relative paths resolve against. perm is the file's permission
// bits, for the password warning. opts says which local files to check
// and whether a missing one is a problem or a warning.
func parse(file, dir string, data []byte, perm fs.FileMode, opts Options) (*Result, []Problem) {
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
		d := &decoder{file: file}
		ns, srcs := d.document(doc.Content[0])
		nodes = append(nodes, ns...)
		sources = append(sources, srcs...)
		problems = append(problems, d.problems...)
	}
	if len(nodes) == 0 && len(problems) == 0 {
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
	fileProblems := checkFiles(file, opts.Files, nodes, sources, problems)
	if opts.FilesRequired {
		problems = append(problems, fileProblems...)
	}
	if len(problems) > 0 {
		sortProblems(problems)
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
	if !opts.FilesRequired && len(fileProblems) > 0 {
		res.Warnings = append(res.Warnings, fileProblems...)
		sortProblems(res.Warnings)
	}
	return res, nil
}

// sortProblems puts problems in file order, keeping the order in which
// they were found for problems of the same line.
func sortProblems(problems []Problem) {
	slices.SortStableFunc(problems, func(a, b Problem) int { return a.Line - b.Line })
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

// document checks apiVersion and kind, then strictly decodes one document
// into its nodes. A wrong or missing apiVersion or kind is a problem, and
// the document is still decoded as this version's Node (or NodeList, when
// it has items), so that the file's other problems are reported with it.
func (d *decoder) document(root *yaml.Node) ([]v1alpha1.Node, []nodeSource) {
	fail := func(line int, format string, args ...any) {
		d.problems = append(d.problems, Problem{File: d.file, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	if root.Kind != yaml.MappingNode {
		fail(root.Line, "expected a Node or NodeList document (a mapping with apiVersion and kind), found %s", describe(root))
		return nil, nil
	}
	want := v1alpha1.SchemeGroupVersion.String()
	apiVersion, kind := mappingValue(root, "apiVersion"), mappingValue(root, "kind")
	switch {
	case apiVersion == nil:
		fail(root.Line, "apiVersion is missing: set apiVersion: %s", want)
	case apiVersion.Value != want:
		fail(apiVersion.Line, "apiVersion %q is not supported: use %s", apiVersion.Value, want)
	}
	docKind := v1alpha1.KindNode
	if mappingValue(root, "items") != nil {
		docKind = v1alpha1.KindNodeList
	}
	switch {
	case kind == nil:
		fail(root.Line, "kind is missing: set kind: %s or %s", v1alpha1.KindNode, v1alpha1.KindNodeList)
	case kind.Value != v1alpha1.KindNode && kind.Value != v1alpha1.KindNodeList:
		fail(kind.Line, "kind %q is not supported: use %s or %s", kind.Value, v1alpha1.KindNode, v1alpha1.KindNodeList)
	default:
		docKind = kind.Value
	}
	if apiVersion != nil {
		apiVersion.Value = want // reported above; the rest decodes as this version
	}
	if kind != nil {
		kind.Value = docKind
	}

	wrapSingleHealthChecks(root)
	if docKind == v1alpha1.KindNode {
		var n v1alpha1.Node
		d.decode(root, &n)
		n.APIVersion, n.Kind = want, v1alpha1.KindNode
		return []v1alpha1.Node{n}, []nodeSource{{root: root, dec: d}}
	}
	var l v1alpha1.NodeList
	d.decode(root, &l)
	sources := make([]nodeSource, len(l.Items))
	for i := range l.Items {
		src := nodeSource{root: root, prefix: fmt.Sprintf("items[%d]", i), dec: d}
		item := &l.Items[i]
		switch {
		case item.APIVersion != "" && item.APIVersion != want:
			d.problems = append(d.problems, src.problem(d.file, item.Name, "apiVersion",
				fmt.Sprintf("apiVersion %q is not supported: use %s", item.APIVersion, want)))
		case item.Kind != "" && item.Kind != v1alpha1.KindNode:
			d.problems = append(d.problems, src.problem(d.file, item.Name, "kind",
				fmt.Sprintf("kind %q is not supported in a NodeList: use %s", item.Kind, v1alpha1.KindNode)))
		}
		item.APIVersion, item.Kind = want, v1alpha1.KindNode
		sources[i] = src
	}
	return l.Items, sources
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
				return line
			}
		case seg.key == "" && n.Kind == yaml.SequenceNode && seg.index < len(n.Content):
			n = n.Content[seg.index]
			line = n.Line
		default:
			return line
		}
	}
	return line
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
