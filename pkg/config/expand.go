package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Limits on what one YAML document may expand to. Aliases let a few
// hundred bytes stand for billions of values (the "billion laughs") or for
// a value that contains itself; every document is checked against these
// limits before it is converted, so neither can exhaust memory or the
// stack. A node file is a few levels deep and needs few aliases, if any.
const (
	// maxAliasValues is how many values the aliases of one document may
	// add to it in all.
	maxAliasValues = 10000
	// maxDepth is how deeply values may nest, aliases followed.
	maxDepth = 100
)

// checkExpansion walks a document as toJSONValue does, following aliases,
// and stops at the first alias inside its own anchor's value, value nested
// deeper than maxDepth, or alias that takes the values aliases add past
// maxAliasValues. The problem names the line of the alias responsible (of
// the value, for nesting written out in full).
func checkExpansion(file string, doc *yaml.Node) *Problem {
	e := &expansion{file: file, open: map[*yaml.Node]bool{}}
	return e.walk(doc, 0)
}

// expansion is the state of one checkExpansion walk.
type expansion struct {
	file string
	// open holds the anchored values being walked: an alias to one of
	// them never ends.
	open map[*yaml.Node]bool
	// via is the outermost alias being expanded, nil outside aliases.
	via *yaml.Node
	// added counts the values aliases added so far.
	added int
}

func (e *expansion) walk(n *yaml.Node, depth int) *Problem {
	if depth > maxDepth {
		line := n.Line
		if e.via != nil {
			line = e.via.Line
		}
		return &Problem{File: e.file, Line: line, Message: fmt.Sprintf(
			"YAML values are nested more than %d levels deep (aliases followed): a node file needs only a few levels; write it out flat", maxDepth)}
	}
	if e.via != nil {
		if e.added++; e.added > maxAliasValues {
			return &Problem{File: e.file, Line: e.via.Line, Message: fmt.Sprintf(
				"YAML aliases expand to more than %d values (here, at alias *%s): a node file needs few aliases; write the values out instead",
				maxAliasValues, e.via.Value)}
		}
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil // the parser rejects an unknown anchor
		}
		if e.open[n.Alias] {
			return &Problem{File: e.file, Line: n.Line, Message: fmt.Sprintf(
				"YAML alias *%s is inside the value of its own anchor &%s, so the value never ends: write it out instead", n.Value, n.Alias.Anchor)}
		}
		if e.via == nil {
			e.via = n
			defer func() { e.via = nil }()
		}
		return e.walk(n.Alias, depth)
	}
	if n.Anchor != "" {
		e.open[n] = true
		defer delete(e.open, n)
	}
	for _, c := range n.Content {
		if p := e.walk(c, depth+1); p != nil {
			return p
		}
	}
	return nil
}
