package wine

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

const kubeSpec = `  kubernetes:
    provisioners:
    - name: swdt-wine
      sourceURL: ./svc.exe
      destination: 'C:\k\swdt-wine.exe'
      register: {}
`

// kube runs swdt kubernetes with timeouts for Wine.
func (n *node) kube(args ...string) (int, string, string) {
	return n.swdt(append([]string{"kubernetes", "--stop-timeout", "20s", "--start-timeout", "30s", "--settle", "1s", "--health-timeout", "10s"}, args...)...)
}

func TestKubernetesRegisterSwapRollBack(t *testing.T) {
	n := newNode(t)
	n.writeConfig(kubeSpec)
	n.winsvc("svc.exe", "build=v1")
	if code, out, _ := n.kube(); code != 0 || !strings.Contains(out, "updated") {
		t.Fatalf("register: exit %d\n%s", code, out)
	}
	n.winsvc("svc.exe", "build=v2")
	if code, out, _ := n.kube(); code != 0 || !strings.Contains(out, "updated") {
		t.Fatalf("swap: exit %d\n%s", code, out)
	}
	n.winsvc("svc.exe", "build=v3 exit=1")
	if code, out, _ := n.kube(); code != exitcode.Partial || !strings.Contains(out, "rolled-back") {
		t.Fatalf("rollback: exit %d, want %d\n%s", code, exitcode.Partial, out)
	}
	// The node runs v2 again: in sync with a local v2.
	n.winsvc("svc.exe", "build=v2")
	code, out, _ := n.swdt("status", "-o", "json")
	var doc struct {
		Nodes []struct {
			Binaries []struct{ Name, Status, Source string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || len(doc.Nodes) != 1 || len(doc.Nodes[0].Binaries) != 1 {
		t.Fatalf("status: exit %d, %v\n%s", code, err, out)
	}
	if b := doc.Nodes[0].Binaries[0]; b.Status != "Running" || b.Source != "in sync" {
		t.Errorf("status = %+v, want Running and in sync", b)
	}
}
