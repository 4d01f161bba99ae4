package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
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
	return exitcode.WithCode(exitcode.Usage, fmt.Errorf("--snapshot: node %s of %s has no spec.vm to snapshot: add one (see samples/vm.yaml) or drop --snapshot; nothing was changed",
		strings.Join(missing, ", "), path))
}

// swapSnapshotName is swdt-<local time>-<provisioners>, cut to the length
// a snapshot name may have.
func swapSnapshotName(now time.Time, provs []v1alpha1.ProvisionerSpec) string {
	name := "swdt-" + now.Format("20060102-150405")
	for _, p := range provs {
		name += "-" + p.Name
	}
	return name[:min(len(name), maxSnapshotName)]
}

// snapshotVM takes the snapshot of w's VM that precedes its swap and
// stores its name in *taken. An error leaves every service running
// (provision.Options.BeforeSwap).
func (k *kubeRun) snapshotVM(ctx context.Context, w nodeWork, taken *string) error {
	ctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	name := w.node.spec.Name
	snap := swapSnapshotName(time.Now(), w.provs)
	k.progress.Step(name, "taking snapshot %s of VM %s", snap, w.node.spec.Spec.VM.Name)
	p, err := k.e.openVM(ctx, w.node.spec)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer p.Close()
	if err := p.Snapshot(ctx, snap); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	*taken = snap
	k.progress.Step(name, "snapshot %s taken: 'swdt vm revert %s' undoes this swap", snap, snap)
	return nil
}
