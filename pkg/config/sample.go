package config

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// SchemaURL is where the JSON Schema of node files is published: the
// repository's schemas/node.schema.json on its main branch (the module
// sigs.k8s.io/swdt is github.com/kubernetes-sigs/swdt). Sample's first
// line points yaml-language-server at it.
const SchemaURL = "https://raw.githubusercontent.com/kubernetes-sigs/swdt/main/schemas/node.schema.json"

// Sample is a commented node file using every field, printed by
// `swdt config init`. samples/node.yaml is a copy (a test keeps them equal).
//
//go:embed sample.yaml
var Sample []byte

// SampleNames are the binaries of Sample that SampleOptions.Only chooses
// from: its provisioners, and wins for spec.wins.
var SampleNames = []string{"containerd", "kubelet", "wins"}

// SampleOptions fill in or trim Sample, as the flags of `swdt config init`
// ask. The zero value leaves it as it is.
type SampleOptions struct {
	// Hostname replaces spec.credentials.hostname (host[:port]).
	Hostname string
	// Username replaces spec.credentials.username.
	Username string
	// PrivateKey replaces spec.credentials.privateKey, and PrivateKey
	// with ".pub" appended replaces spec.setup.authorizedKeys, so that
	// swdt setup installs the key that later runs log in with.
	PrivateKey string
	// Only, when not empty, keeps only these of SampleNames: the other
	// provisioners, and spec.wins unless it names wins, are left out.
	Only []string
}

// SampleWith returns Sample with opts applied, its comments and layout
// kept. The result is checked as Load checks a file, except for the local
// files it names: a value that makes it invalid is an error.
func SampleWith(opts SampleOptions) ([]byte, error) {
	lines := strings.SplitAfter(string(Sample), "\n")
	var errs []error
	set := func(key, value string, list bool) {
		if value == "" {
			return
		}
		if strings.ContainsFunc(value, unicode.IsControl) {
			errs = append(errs, fmt.Errorf("%s: %q holds a control character", key, value))
			return
		}
		text, err := yamlText(value, list)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
			return
		}
		lines = setValue(lines, key, text)
	}
	set("hostname", opts.Hostname, false)
	set("username", opts.Username, false)
	set("privateKey", opts.PrivateKey, false)
	if opts.PrivateKey != "" {
		set("authorizedKeys", opts.PrivateKey+".pub", true)
	}
	if len(opts.Only) > 0 {
		var err error
		if lines, err = keepOnly(lines, opts.Only); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	out := []byte(strings.Join(lines, ""))
	if _, problems := parse("node.yaml", ".", out, 0o600, Options{}); len(problems) > 0 {
		msgs := make([]string, len(problems))
		for i, p := range problems {
			msgs[i] = strings.TrimPrefix(p.Field+": "+p.Message, ": ")
		}
		return nil, fmt.Errorf("the node file would be invalid: %s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// yamlText is s as a YAML string on one line, quoted only when it must
// be; in a flow sequence of one item when list is set.
func yamlText(s string, list bool) (string, error) {
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
	if list {
		n = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{n}}
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		return "", fmt.Errorf("encode %q: %w", s, err)
	}
	return strings.TrimSuffix(string(out), "\n"), nil
}

// setValue replaces the value of the one line of Sample that sets key.
func setValue(lines []string, key, value string) []string {
	for i, l := range lines {
		trimmed := strings.TrimLeft(l, " ")
		if strings.HasPrefix(trimmed, key+": ") {
			lines[i] = l[:len(l)-len(trimmed)] + key + ": " + value + "\n"
			return lines
		}
	}
	// Sample is embedded: a test sets every key.
	panic("config: the sample sets no " + key)
}

// keepOnly removes the provisioners of Sample that only does not name,
// and spec.wins when only does not name wins.
func keepOnly(lines []string, only []string) ([]string, error) {
	for _, name := range only {
		if !slices.Contains(SampleNames, name) {
			return nil, fmt.Errorf("--only: the sample has no %q: choose from %s", name, strings.Join(SampleNames, ", "))
		}
	}
	var out []string
	kept := 0
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		indent := len(lines[i]) - len(trimmed)
		var name string
		switch {
		case indent == 4 && strings.HasPrefix(trimmed, "- name: "):
			name = strings.TrimSpace(strings.TrimPrefix(trimmed, "- name: "))
		case indent == 2 && trimmed == "wins:\n":
			name = "wins"
		default:
			out = append(out, lines[i])
			continue
		}
		end := i + 1
		for end < len(lines) && indentOf(lines[end]) > indent {
			end++
		}
		switch {
		case slices.Contains(only, name):
			out = append(out, lines[i:end]...)
			if name != "wins" {
				kept++
			}
		case name == "wins":
			// Its heading comments go with it.
			for strings.HasPrefix(out[len(out)-1], "  # ") {
				out = out[:len(out)-1]
			}
		}
		i = end - 1
	}
	if kept == 0 {
		// The list is empty, and its heading comments go.
		i := slices.Index(out, "    provisioners:\n")
		end := i + 1
		for end < len(out) && strings.HasPrefix(out[end], "    # ") {
			end++
		}
		out = slices.Replace(out, i, end, "    provisioners: []\n")
	}
	return out, nil
}

// indentOf is the number of spaces a line starts with.
func indentOf(l string) int {
	return len(l) - len(strings.TrimLeft(l, " "))
}

// DefaultKeys are the private keys OpenSSH's client tries when none is
// configured, in its order, as paths under ~/.ssh.
var DefaultKeys = []string{"id_ed25519", "id_ecdsa", "id_rsa"}

// DefaultPrivateKey is the first of DefaultKeys that exists under
// home/.ssh, written as ~/.ssh/NAME for a node file, or "" when none
// does: swdt config init then names the one this user has, not a key
// that is not there.
func DefaultPrivateKey(home string) string {
	for _, n := range DefaultKeys {
		if fi, err := os.Stat(filepath.Join(home, ".ssh", n)); err == nil && fi.Mode().IsRegular() {
			return "~/.ssh/" + n
		}
	}
	return ""
}
