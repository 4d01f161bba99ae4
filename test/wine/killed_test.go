//go:build unix

package wine

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"
	"sigs.k8s.io/swdt/pkg/ops"
)

// swdt SIGKILLed in the middle of a swap (its journal is on the node and
// the old build ignores its stop control): the next swdt kubernetes
// repairs the swap, kills the hung process and swaps in the new build.
func TestKubernetesAfterSwdtWasKilled(t *testing.T) {
	n := newNode(t)
	n.writeConfig(oneService)
	n.winsvc("a.exe", "build=1 hangstop=1")
	if code, got := n.kubeActions(); code != 0 || got["swdt-wine"] != "updated" {
		t.Fatalf("register: exit %d %v", code, got)
	}
	n.winsvc("a.exe", "build=2")
	errOut := &syncbuf.Buffer{}
	cmd := exec.Command(os.Args[0], "kubernetes", "-c", n.config, "--no-color", "--stop-timeout", "1h", "--start-timeout", "30s", "--settle", "1s")
	cmd.Env = append(os.Environ(), runAsSwdt+"=1")
	cmd.Stdout, cmd.Stderr = &syncbuf.Buffer{}, errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The swap has begun once its journal is on the node.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !n.ts.Node().Exists(ops.JournalPath) {
		select {
		case err := <-exited:
			t.Fatalf("swdt ended (%v) before the swap began:\n%s", err, errOut.String())
		case <-tick.C:
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if code, got := n.kubeActions("--stop-timeout", "3s"); code != 0 || got["swdt-wine"] != "updated" {
		t.Fatalf("after the kill: exit %d %v", code, got)
	}
	if got := n.status(); got["swdt-wine"] != "Running/in-sync" {
		t.Errorf("status = %v", got)
	}
}
