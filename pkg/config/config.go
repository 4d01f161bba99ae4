// Package config reads swdt node files: it strict-decodes every document,
// resolves local paths against the file's directory, applies the Node API's
// defaults and validates the result, reporting every problem at once with
// the line it comes from.
//
// It must never print, contact a node or read the files a node file names
// (it may check that they exist and open them): it only turns a file into
// checked []v1alpha1.Node values.
package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// Result is a loaded, defaulted and valid config file.
type Result struct {
	// Path is the absolute path of the file.
	Path string
	// Nodes are the nodes of the file in order, defaulted and with local
	// paths resolved.
	Nodes []v1alpha1.Node
	// Warnings are problems that do not stop swdt, such as a password in a
	// file that others can read.
	Warnings []Problem
}

// Problem is one thing wrong with a config file.
type Problem struct {
	// File is the path of the config file, as given to Load.
	File string `json:"file"`
	// Line is the 1-based line the problem comes from, or 0 when unknown.
	Line int `json:"line,omitempty"`
	// Node is the metadata.name of the node concerned, when known.
	Node string `json:"node,omitempty"`
	// Field is the field path, for example
	// spec.kubernetes.provisioners[1].destination; empty for problems with
	// the file as a whole.
	Field string `json:"field,omitempty"`
	// Message says what is wrong and, where it can, how to fix it.
	Message string `json:"message"`
}

// String formats the problem as file:line: node "n": field: message.
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d", p.Line)
	}
	b.WriteString(": ")
	if p.Node != "" {
		fmt.Fprintf(&b, "node %q: ", p.Node)
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error is an unusable config file: it cannot be read, cannot be decoded or
// is invalid. Problems lists everything found, not only the first. Load
// annotates it with exitcode.Usage.
type Error struct {
	// Path is the config file as given to Load.
	Path string
	// Problems are every problem found, in file order.
	Problems []Problem
	// cause is the underlying error of a file that could not be read.
	cause error
}

// Error joins the problems, one per line.
func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0].String()
	}
	lines := make([]string, 0, len(e.Problems)+1)
	lines = append(lines, fmt.Sprintf("%s: %d problems", e.Path, len(e.Problems)))
	for _, p := range e.Problems {
		lines = append(lines, "  "+p.String())
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the error that stopped the file from being read, if any
// (for example fs.ErrNotExist).
func (e *Error) Unwrap() error { return e.cause }

// Load reads the config file at path and returns its nodes, without
// looking at the local files it names (LoadWith does). Every error it
// returns is an *Error annotated with exitcode.Usage.
func Load(path string) (*Result, error) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with options: opts says which local files the node file
// names are checked, and whether one that does not exist or cannot be read
// is a problem or a warning.
func LoadWith(path string, opts Options) (*Result, error) {
	data, perm, err := readFile(path)
	if err != nil {
		return nil, exitcode.WithCode(exitcode.Usage, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, exitcode.WithCode(exitcode.Usage, fileError(path, err, "cannot resolve the path: %v", err))
	}
	res, problems := parse(path, filepath.Dir(abs), data, perm, opts)
	if len(problems) > 0 {
		return nil, exitcode.WithCode(exitcode.Usage, &Error{Path: path, Problems: problems})
	}
	res.Path = abs
	return res, nil
}

func fileError(path string, cause error, format string, args ...any) *Error {
	return &Error{Path: path, cause: cause, Problems: []Problem{{File: path, Message: fmt.Sprintf(format, args...)}}}
}

// readFile reads a config file and its permission bits, and tells apart the
// ways it can be unusable before decoding starts.
func readFile(path string) ([]byte, fs.FileMode, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, 0, fileError(path, err,
			"config file not found: pass -c FILE, set SWDT_CONFIG, or create one with 'swdt config init --output-file %s'", path)
	case err != nil:
		return nil, 0, fileError(path, err, "cannot read the config file: %v", err)
	case fi.IsDir():
		return nil, 0, fileError(path, nil, "is a directory, not a config file: pass the path of a node YAML file")
	}
	data, err := readLimited(path)
	if err != nil {
		return nil, 0, err
	}
	if strings.TrimSpace(string(data)) == "" {
		return nil, 0, fileError(path, nil, "config file is empty: expected a Node or NodeList document (see 'swdt config init')")
	}
	if i := strings.IndexByte(string(data), 0); i >= 0 || !utf8.Valid(data) {
		if i < 0 {
			i = invalidUTF8Offset(data)
		}
		return nil, 0, fileError(path, nil,
			"not a text file (binary data at byte %d): expected a YAML Node or NodeList document", i)
	}
	return data, fi.Mode().Perm(), nil
}

// MaxFileSize is the largest config file Load reads: far more than any
// node file needs, and a bound on the memory a hostile one can take.
const MaxFileSize = 1 << 20

// readLimited reads at most MaxFileSize bytes of path. The size is checked
// while reading, not from a stat, so that a device or a pipe that never
// ends is refused too.
func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err, "cannot read the config file: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fileError(path, err, "cannot read the config file: %v", err)
	}
	if len(data) > MaxFileSize {
		return nil, fileError(path, nil,
			"is larger than %d MiB, the most swdt reads from a node file: check that -c names a node YAML file", MaxFileSize>>20)
	}
	return data, nil
}

func invalidUTF8Offset(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(data)
}

// passwordWarning warns when a file that holds a password can be read by
// group or others. Windows has no such mode bits, so it is skipped there.
func passwordWarning(path string, perm fs.FileMode, n *v1alpha1.Node, src nodeSource) (Problem, bool) {
	if runtime.GOOS == "windows" || perm&0o077 == 0 || n.Spec.Credentials.Password == "" {
		return Problem{}, false
	}
	return src.problem(path, n.Name, "spec.credentials.password",
		fmt.Sprintf("the file holds a password and is readable by group or others (mode %#o): run 'chmod 600 %s' or use passwordEnv",
			perm, path)), true
}

// validate checks every node and that their names are unique. docs holds
// each node's position, so that problems point at lines. A problem that
// only repeats one decoding found (a required field left unset because it
// had the wrong type) is left out.
func validate(path string, nodes []v1alpha1.Node, docs []nodeSource) []Problem {
	var problems []Problem
	seen := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		errs := v1alpha1.ValidateNode(n)
		if n.Name != "" && seen[n.Name] {
			errs = append(errs, field.Duplicate(field.NewPath("metadata", "name"), n.Name))
		}
		seen[n.Name] = true
		for _, e := range errs {
			if !docs[i].dec.repeats(docs[i].full(e.Field)) {
				problems = append(problems, docs[i].problem(path, n.Name, e.Field, e.ErrorBody()))
			}
		}
	}
	return problems
}
