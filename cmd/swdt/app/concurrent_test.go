package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// Two runs against one node, for real and at the same time, each with a
// build of its own: the node's lock makes one wait for the other (and say
// so), so each swaps its own verified build and none reports "updated"
// for a build the node does not run when it ends.
func TestKubernetesConcurrentRunsNeverLie(t *testing.T) {
	t.Parallel()
	// A slow swap keeps the first run's lock held while the second asks.
	fx := newKubeFixture(t, simnode.WithFaults(simnode.Faults{OpLatencyMS: map[string]int{ops.ServiceSwap.Name: 1500}}))
	other := t.TempDir()
	raw, err := os.ReadFile(fx.config)
	if err != nil {
		t.Fatal(err)
	}
	configB := filepath.Join(other, "node.yaml")
	if err := os.WriteFile(configB, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		if err := os.WriteFile(filepath.Join(other, name+".exe"), []byte("MZ "+name+" v3\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type outcome struct {
		code   int
		errOut string
		build  string
	}
	runs := []struct{ config, build string }{{fx.config, "v2"}, {configB, "v3"}}
	outcomes := make([]outcome, len(runs))
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, errOut lockedBuffer
			code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut},
				[]string{"kubernetes", "-c", r.config, "--cache-dir", filepath.Join(filepath.Dir(r.config), "cache"), "--no-color",
					"--stop-timeout", "300ms", "--start-timeout", "3s", "--settle", "200ms", "--health-timeout", "500ms"})
			outcomes[i] = outcome{code: code, errOut: errOut.String(), build: r.build}
		}()
	}
	wg.Wait()

	var waited []outcome
	for _, o := range outcomes {
		if o.code != exitcode.OK {
			t.Errorf("run of %s: exit %d\n%s", o.build, o.code, o.errOut)
		}
		if strings.Contains(o.errOut, "waiting for the node's swap lock, held by swdt kubernetes run") {
			waited = append(waited, o)
		}
	}
	if len(waited) != 1 {
		t.Fatalf("%d runs waited for the lock, want 1:\n%s\n---\n%s", len(waited), outcomes[0].errOut, outcomes[1].errOut)
	}
	// The run that waited swapped last: the node runs its build.
	for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
		dest := map[string]string{"containerd": containerdExe, "kubelet": kubeletExe, "kube-proxy": kubeProxyExe}[name]
		if got, want := fx.content(dest), "MZ "+name+" "+waited[0].build+"\n"; got != want {
			t.Errorf("%s holds %q, want the waiting run's %q", dest, got, want)
		}
	}
	fx.assertHealthy()
}
