package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/swdt/internal/binfmt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/source"
)

// FileKind is a set of kinds of local files a node file names, checked by
// LoadWith: that each exists and can be read.
type FileKind uint

const (
	// PrivateKeyFile is credentials.privateKey, read by every command that
	// connects to a node.
	PrivateKeyFile FileKind = 1 << iota
	// AuthorizedKeyFiles are setup.authorizedKeys, read by swdt setup.
	AuthorizedKeyFiles
	// ProvisionerSources are the sourceURLs of provisioners that are local
	// paths or file:// URLs, read by swdt kubernetes and swdt status.
	ProvisionerSources
	// WinsSource is wins.sourceURL when it is a local path or a file://
	// URL, read by swdt wins and swdt status.
	WinsSource
	// AllFiles are every kind. (knownHostsFile is none: swdt creates it.)
	AllFiles = PrivateKeyFile | AuthorizedKeyFiles | ProvisionerSources | WinsSource
)

// Options change what LoadWith checks.
type Options struct {
	// Files are the kinds of local files to check. A file of one of them
	// that does not exist or cannot be read is a warning (for a command,
	// which may not need that very file: swdt status without a local build
	// still shows the node, and "no local build"), or a problem when
	// FilesRequired is set (swdt config validate).
	Files FileKind
	// FilesRequired makes a missing or unreadable file a problem.
	FilesRequired bool
}

// localFile is one local file a node names.
type localFile struct {
	// kind is the kind of file.
	kind FileKind
	// field is its field path in the node.
	field string
	// path is the resolved path.
	path string
	// what names the file in messages, and fix says what to do when it is
	// missing.
	what, fix string
	// program is set for a source that becomes a program on a Windows
	// node (its destination ends in .exe): it must not be one for
	// another OS.
	program bool
}

// localFiles lists the local files of a node, its paths already resolved.
func localFiles(n *v1alpha1.Node) []localFile {
	var files []localFile
	if k := n.Spec.Credentials.PrivateKey; k != "" {
		files = append(files, localFile{kind: PrivateKeyFile, field: "spec.credentials.privateKey", path: k, what: "private key file",
			fix: "fix privateKey, or remove it to use ssh-agent, ~/.ssh/config and the default keys"})
	}
	for i, k := range n.Spec.Setup.AuthorizedKeys {
		files = append(files, localFile{kind: AuthorizedKeyFiles, field: fmt.Sprintf("spec.setup.authorizedKeys[%d]", i), path: k, what: "public key file",
			fix: "fix the path (swdt setup adds the key to the node), or remove it"})
	}
	for i, p := range n.Spec.Kubernetes.Provisioners {
		if path, ok := source.LocalPath(p.SourceURL); ok {
			files = append(files, localFile{kind: ProvisionerSources, field: fmt.Sprintf("spec.kubernetes.provisioners[%d].sourceURL", i), path: path,
				what: "source", fix: "build it first or fix sourceURL", program: isProgram(p.Destination)})
		}
	}
	if w := n.Spec.Wins; w != nil {
		if path, ok := source.LocalPath(w.SourceURL); ok {
			files = append(files, localFile{kind: WinsSource, field: "spec.wins.sourceURL", path: path, what: "source",
				fix: "build wins.exe first or fix sourceURL", program: true})
		}
	}
	return files
}

// checkFiles returns a problem for each local file of the nodes of the
// given kinds that does not exist, is not a file or cannot be opened for
// reading. It opens the files but reads none. A field that already has a
// problem (an invalid value, a path that could not be resolved) is not
// checked: its path is not the one swdt would read.
func checkFiles(file string, kinds FileKind, nodes []v1alpha1.Node, docs []nodeSource, known []Problem) []Problem {
	var problems []Problem
	for i := range nodes {
		for _, f := range localFiles(&nodes[i]) {
			full := docs[i].full(f.field)
			if f.kind&kinds == 0 || slices.ContainsFunc(known, func(p Problem) bool { return p.Field == full }) {
				continue
			}
			if msg := fileProblem(f); msg != "" {
				problems = append(problems, docs[i].problem(file, nodes[i].Name, f.field, msg))
			}
		}
	}
	return problems
}

// fileProblem says what is wrong with a local file, or "" when it can be
// read. Only a regular file is opened: opening a FIFO would block.
func fileProblem(f localFile) string {
	info, err := os.Stat(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s %s does not exist: %s", f.what, f.path, f.fix)
	case err != nil:
		return fmt.Sprintf("%s %s cannot be read: %v", f.what, f.path, cause(err))
	case info.IsDir():
		return fmt.Sprintf("%s %s is a directory, not a file: %s", f.what, f.path, f.fix)
	case !info.Mode().IsRegular():
		return fmt.Sprintf("%s %s is not a regular file (%s): %s", f.what, f.path, info.Mode().Type(), f.fix)
	}
	r, err := os.Open(f.path)
	if err != nil {
		return fmt.Sprintf("%s %s cannot be read: %v: check its permissions", f.what, f.path, cause(err))
	}
	defer r.Close()
	if f.program {
		if info, err := binfmt.Identify(r); err == nil {
			var nw *binfmt.NotForWindowsError
			if err := binfmt.Check(f.path, info, ""); errors.As(err, &nw) {
				return fmt.Sprintf("%s %s", f.what, nw.Error())
			}
		}
	}
	return ""
}

// isProgram reports whether a destination on the node is a program.
func isProgram(dest string) bool { return strings.HasSuffix(strings.ToLower(dest), ".exe") }

// cause is the error of a failed file operation without the operation and
// path, which the message already names.
func cause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
