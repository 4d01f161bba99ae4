package machine

import (
	"os"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// ShimBinary is the file name of containerd's runtime shim for Windows
// (hcsshim's runhcs shim), which containerd looks for beside its own
// binary.
const ShimBinary = "containerd-shim-runhcs-v1.exe"

// StartPodSandbox plays containerd starting a pod sandbox, as the
// kubelet's RunPodSandbox makes it: one process of containerd's shim
// (ShimBinary, beside the binary of the Running service containerd), a
// child of containerd's process, serving the sandbox id. Like a real
// shim it does not end with containerd: it keeps the pod's containers
// running across containerd's restarts and keeps its image locked until
// it exits or is killed, so that the shim binary can be neither replaced
// in place nor deleted while pods run. It fails, as containerd's
// RunPodSandbox does, when containerd does not run or the shim is
// missing.
func (n *Node) StartPodSandbox(id string) (int, error) {
	var pid int
	err := n.m.update(func(s *State, now time.Time) error {
		ctrd := s.Services["containerd"]
		if ctrd == nil || ctrd.Status != StatusRunning || ctrd.PID == 0 {
			return Fail(ops.KindService, "containerd does not run: no pod sandbox can start")
		}
		shim := winpath.Join(winpath.Dir(ctrd.BinaryPath), ShimBinary)
		w, err := ntfs.ParsePath(shim)
		if err != nil {
			return err
		}
		host, canon, err := ntfs.Resolve(n.m.fsRoot, w)
		if err == nil {
			_, err = os.Stat(host)
		}
		if err != nil {
			return Fail(ops.KindNotFound, "failed to start shim: %s: %v", shim, err)
		}
		pid = s.NextPID
		s.NextPID += 4
		s.Processes[pid] = &Process{PID: pid, Image: string(canon), Parent: ctrd.PID, Started: now,
			CommandLine: `"` + string(canon) + `" -namespace k8s.io -address \\.\pipe\containerd-containerd -id ` + strings.TrimSpace(id)}
		return nil
	})
	return pid, err
}
