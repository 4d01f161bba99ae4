package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui"
)

// snapshotTimeout bounds taking a VM snapshot before a swap: a snapshot
// of a running VM writes its memory out.
const snapshotTimeout = 10 * time.Minute

// maxSnapshotName is the longest snapshot name vm.CheckSnapshotName takes.
const maxSnapshotName = 128

// checkSnapshotNodes makes sure every node has a VM to snapshot before
// anything is done (swdt kubernetes --snapshot).
func checkSnapshotNodes(path string, nodes []v1alpha1.Node) error {
	var missing []string
	for _, n := range nodes {
		if n.Spec.VM == nil {
			missing = append(missing, n.Name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return exitcode.WithCode(exitcode.Usage, fmt.Errorf("--snapshot: node %s of %s has no spec.vm to snapshot: add one (see the commented vm section of 'swdt config init') or drop --snapshot; nothing was changed",
		strings.Join(missing, ", "), path))
}

// swapSnapshotName is swdt-<local time>-<provisioners>, cut to the length
// a snapshot name may have.
func swapSnapshotName(now time.Time, provisioners []string) string {
	name := "swdt-" + now.Format("20060102-150405")
	for _, p := range provisioners {
		name += "-" + p
	}
	return name[:min(len(name), maxSnapshotName)]
}

// snapshotVM takes the snapshot of spec's VM that precedes its swap and
// returns its name: swdt kubernetes --snapshot, composing pkg/vm with the
// swap of pkg/provision. An error leaves every service running.
func (e *env) snapshotVM(ctx context.Context, progress *ui.Progress, spec *v1alpha1.Node, provisioners []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	snap := swapSnapshotName(time.Now(), provisioners)
	progress.Step(spec.Name, "taking snapshot %s of VM %s", snap, spec.Spec.VM.Name)
	p, err := e.openVM(ctx, spec)
	if err != nil {
		return "", fmt.Errorf("snapshot: %w", err)
	}
	defer p.Close()
	if err := p.Snapshot(ctx, snap); err != nil {
		return "", fmt.Errorf("snapshot: %w", err)
	}
	progress.Step(spec.Name, "snapshot %s taken; to undo this swap: %s", snap, e.hint("vm revert "+snap))
	return snap, nil
}
