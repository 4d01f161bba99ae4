//go:build unix

package app

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// swdt killed with SIGKILL at several points of a swap, its agent dying
// with it or running on: the next swdt kubernetes finds the unfinished
// swap (its journal on the node) and the dead run's lock, repairs the
// swap before it plans anything, says which binary each service was left
// with, and ends with every service Running the new verified binary.
func TestKubernetesAfterSwdtWasKilled(t *testing.T) {
	tests := []struct {
		name string
		// faults stop the swap at the point where swdt is killed.
		faults simnode.Faults
		// wantSaid are lines of the second run's stderr.
		wantSaid []string
	}{
		{name: "after staging",
			faults:   simnode.Faults{OpLatencyMS: map[string]int{ops.ServiceSwap.Name: int(time.Hour.Milliseconds())}},
			wantSaid: []string{"took over the swap lock of swdt kubernetes run", "removed 3 file(s) it had staged"}},
		// As under OpenSSH for Windows, the agent of the killed swdt runs
		// on to the end of the swap: the next run waits for its lock, and
		// finds every binary swapped.
		{name: "after a stop, the agent running on",
			faults:   simnode.Faults{HoldAgent: &simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "StopService", Target: "kubelet"}},
			wantSaid: []string{"containerd   unchanged", "kubelet      unchanged", "kube-proxy   unchanged"}},
		// The agent dies too (the node lost power): the next run repairs.
		{name: "after a stop",
			faults: simnode.Faults{HoldAgent: &simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "StopService", Target: "kubelet", Dies: true}},
			wantSaid: []string{"repaired the unfinished swap of swdt kubernetes run",
				"containerd runs the old binary again", "kubelet runs the old binary again", "kube-proxy runs the old binary again"}},
		{name: "after a rename",
			faults: simnode.Faults{HoldAgent: &simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "Rename", Target: ".swdt-new", Count: 2, Dies: true}},
			wantSaid: []string{"repaired the unfinished swap",
				"containerd runs the new verified binary", "kubelet runs the new verified binary", "kube-proxy runs the old binary again"}},
		{name: "during the start",
			faults: simnode.Faults{HoldAgent: &simnode.AgentHold{Op: ops.ServiceSwap.Name, Call: "StartService", Target: "kubelet", Dies: true}},
			wantSaid: []string{"repaired the unfinished swap",
				"containerd runs the new verified binary", "kubelet runs the new verified binary", "kube-proxy runs the new verified binary"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newKubeFixture(t, simnode.WithFaults(tt.faults))
			errOut := &lockedBuffer{}
			cmd := exec.Command(os.Args[0], "kubernetes", "-c", fx.config, "--cache-dir", fx.cache, "--no-color",
				"--stop-timeout", "300ms", "--start-timeout", "3s", "--settle", "200ms", "--health-timeout", "500ms")
			cmd.Env = append(os.Environ(), asSwdt+"=1")
			cmd.Stdout, cmd.Stderr = &lockedBuffer{}, errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			reached := func() bool {
				if tt.faults.HoldAgent != nil {
					return fx.ts.Node().HoldsReached() == 1
				}
				return strings.Contains(errOut.String(), "swapping")
			}
			ok := waitFor(t, reached)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if !ok {
				t.Fatalf("the swap never reached the point:\n%s", errOut.String())
			}
			if tt.faults.OpLatencyMS != nil {
				_ = fx.ts.SetFaults(simnode.Faults{})
			}

			code, out, errOut2 := fx.run(context.Background(), "-o", "json")
			if code != exitcode.OK {
				t.Fatalf("exit %d after the kill\n%s\n%s", code, out, errOut2)
			}
			var doc report.Kubernetes
			if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) != 1 {
				t.Fatalf("bad JSON (%v):\n%s", err, out)
			}
			repaired := strings.Contains(strings.Join(tt.wantSaid, " "), "repaired")
			if got := doc.Nodes[0].Repair; repaired != (got != nil && len(got.Items) > 0) {
				t.Errorf("the JSON report's repair is %+v; a repair was due: %v", got, repaired)
			}
			for _, want := range tt.wantSaid {
				if !strings.Contains(errOut2, want) {
					t.Errorf("stderr does not say %q:\n%s", want, errOut2)
				}
			}
			fx.assertHealthy()
			for name, dest := range map[string]string{"containerd": containerdExe, "kubelet": kubeletExe, "kube-proxy": kubeProxyExe} {
				if got := fx.content(dest); got != "MZ "+name+" v2\n" {
					t.Errorf("%s holds %q", dest, got)
				}
			}
			for _, p := range []string{ops.JournalPath, ops.LockPath} {
				if fx.ts.Node().Exists(p) {
					t.Errorf("%s left behind", p)
				}
			}
		})
	}
}
