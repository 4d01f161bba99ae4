// Package report is the one home of what every swdt verb prints as its
// outcome: the -o json document (its kind, its fields, the result of each
// node and item) and the text table beside it. docs/reference.md lists
// each verb's kind and fields; a test in cmd/swdt/app checks the two
// against each other.
//
// It shapes and prints through *ui.UI; it must never decide what to do,
// contact a node or choose an exit code.
package report

import (
	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ui"
)

// Meta opens every JSON document swdt prints, so a script can tell which
// document it reads and of which version.
type Meta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// meta is the Meta of a document of kind.
func meta(kind string) Meta {
	return Meta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: kind}
}

// The kind of each verb's document. The rule: the verb spelled out in
// CamelCase, then Report; the subcommands of a verb share its kind.
const (
	KindSetup       = "SetupReport"
	KindKubernetes  = "KubernetesReport"
	KindWins        = "WinsReport"
	KindJoin        = "JoinReport"
	KindStatus      = "StatusReport"
	KindLogs        = "LogsReport"
	KindExec        = "ExecReport"
	KindSSH         = "SSHReport"
	KindCopy        = "CopyReport"
	KindPortForward = "PortForwardReport"
	KindRestart     = "RestartReport"
	KindReboot      = "RebootReport"
	KindVM          = "VMReport"
	KindConfig      = "ConfigReport"
	KindVersion     = "VersionReport"
)

// The one result vocabulary of every node and item in -o json output
// (a node, a setup step, a provisioner, a wins check), next to each
// verb's own detail. The text tables use the same words.
const (
	// Changed: swdt changed it.
	Changed = "changed"
	// Unchanged: a verb that changes things found it as wanted.
	Unchanged = "unchanged"
	// WouldChange: --dry-run, a run would change it.
	WouldChange = "would-change"
	// RolledBack: the new binary failed and the old one runs again.
	RolledBack = "rolled-back"
	// Failed: it could not be done, or a check did not pass.
	Failed = "failed"
	// Passed: a check passed.
	Passed = "passed"
	// OK: a read-only verb read it, or a program it ran exited 0.
	OK = "ok"
	// InSync: status found the node running exactly the wanted binaries.
	InSync = "in-sync"
	// OutOfSync: status found a binary missing, different, unverified or
	// not the one its service runs.
	OutOfSync = "out-of-sync"
	// Listening: port-forward's ports listen until Ctrl-C.
	Listening = "listening"
	// Removed: join --reset took the node out of its cluster.
	Removed = "removed"
)

// Results lists every word a result may be.
var Results = []string{Changed, Unchanged, WouldChange, RolledBack, Failed, Passed, OK, InSync, OutOfSync, Listening, Removed,
	DoneBefore, Interrupted, Untouched}

// checkResult maps a check's outcome to the shared vocabulary.
func checkResult(ok bool) string {
	if ok {
		return Passed
	}
	return Failed
}

// worst is the result of a node from its items': failed over rolled-back
// over changed over would-change over the rest.
func worst(results ...string) string {
	rank := map[string]int{Failed: 5, RolledBack: 4, Changed: 3, WouldChange: 2}
	out, best := Unchanged, 0
	for _, r := range results {
		if rank[r] > best {
			out, best = r, rank[r]
		}
	}
	return out
}

// show prints a verb's outcome: doc with -o json (on one line when the
// verb streams), else the table.
func show(u *ui.UI, doc any, headers []string, rows [][]string) error {
	if u.Format() == ui.FormatJSON {
		return printJSON(u, doc)
	}
	return u.Table(headers, rows)
}

// printJSON prints doc: indented, or on one line when u streams (a verb that
// prints more than one document, such as logs --follow or kubernetes
// --watch, prints one document per line).
func printJSON(u *ui.UI, doc any) error {
	if u.Streaming() {
		return u.JSONLine(doc)
	}
	return u.JSON(doc)
}

// errText is err's message, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
