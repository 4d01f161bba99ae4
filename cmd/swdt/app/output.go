package app

import (
	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ui"
)

// docMeta opens every JSON document swdt prints, so a script can tell
// which document it reads and of which version.
type docMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// meta is the docMeta of a document of kind.
func meta(kind string) docMeta {
	return docMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: kind}
}

// The one result vocabulary of every item in -o json output (a setup
// step, a provisioner, a wins check), next to each command's own detail.
const (
	resultChanged     = "changed"
	resultUnchanged   = "unchanged"
	resultWouldChange = "would-change"
	resultRolledBack  = "rolled-back"
	resultFailed      = "failed"
	resultPassed      = "passed"
)

// provisionResult maps a provisioner's action to the shared vocabulary.
func provisionResult(a hotswap.Action) string {
	switch a {
	case hotswap.ActionUpdated, hotswap.ActionReconfigured:
		return resultChanged
	case hotswap.ActionUnchanged:
		return resultUnchanged
	case hotswap.ActionUpdate, hotswap.ActionReconfigure:
		return resultWouldChange
	case hotswap.ActionRolledBack:
		return resultRolledBack
	default:
		return resultFailed
	}
}

// checkResult maps a check's outcome to the shared vocabulary.
func checkResult(ok bool) string {
	if ok {
		return resultPassed
	}
	return resultFailed
}

// printDoc prints a command's outcome: doc with -o json, else the table.
func printDoc(u *ui.UI, doc any, headers []string, rows [][]string) error {
	if u.Format() == ui.FormatJSON {
		return u.JSON(doc)
	}
	return u.Table(headers, rows)
}
