package app

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A virus scanner holds every fresh or just-stopped executable for a
// moment (issue 22, item 4): the upload's rename, the swap's renames and
// the backup's removal are refused at first. Every swap still succeeds.
func TestKubernetesWithScannerHold(t *testing.T) {
	t.Parallel()
	for _, setup := range []simnode.KubeletSetup{simnode.KubeletSC, simnode.KubeletNSSMPowerShell} {
		t.Run(string(setup), func(t *testing.T) {
			fx := newKubeFixture(t, simnode.WithScannerHold(400*time.Millisecond), simnode.WithKubeletSetup(setup))
			for _, version := range []string{"v2", "v3"} {
				for _, name := range []string{"containerd", "kubelet", "kube-proxy"} {
					fx.writeSource(name, "MZ "+name+" "+version+"\n")
				}
				code, doc, errOut := fx.runJSON()
				if code != exitcode.OK {
					t.Fatalf("%s: exit %d\n%s", version, code, errOut)
				}
				for name, p := range actions(doc) {
					if p.Action != "updated" {
						t.Errorf("%s: %s = %+v", version, name, p)
					}
				}
				for name, dest := range map[string]string{"containerd": containerdExe, "kubelet": kubeletExe, "kube-proxy": kubeProxyExe} {
					if got := fx.content(dest); got != "MZ "+name+" "+version+"\n" {
						t.Errorf("%s: %s holds %q", version, dest, got)
					}
				}
				fx.assertHealthy()
			}
			if code, _, errOut := fx.run(context.Background()); code != exitcode.OK {
				t.Errorf("third run: exit %d\n%s", code, errOut)
			}
		})
	}
}
