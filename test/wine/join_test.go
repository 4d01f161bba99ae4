package wine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// The real kubelet.exe (built by make cluster-bins from hack/cluster's
// release, and a developer's build with another version stamp) under
// Wine, joined to a real control plane on loopback; its runtime is
// crifake, upstream's fake CRI runtime on TCP (Wine has no AF_UNIX
// sockets, and gRPC over named pipes between Wine processes fails).
const (
	joinNodeName = "wine-node"
	devVersion   = clustertest.Version + "-1+0123456789abcd"
)

// joinSpec is the node file's kubernetes section of the join tests.
func joinSpec(kubeconfig, criSocket, version, timeout string) string {
	return fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: kube-log-runner
      service: kubelet
      sourceURL: ./kube-log-runner.exe
      destination: 'C:\k\kube-log-runner.exe'
    - name: kubelet
      version: %s
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
    join:
      kubeconfig: %q
      nodeName: %s
      criSocket: %s
      labels:
        example.com/tier: wine
      timeout: %s
`, version, kubeconfig, joinNodeName, criSocket, timeout)
}

// joinDoc is what the tests read of swdt join -o json.
type joinDoc struct {
	Nodes []struct {
		Result       string
		FilesChanged []string
		Node         struct {
			Registered     bool
			KubeletVersion string
			OS             string
		}
		Error string
	}
}

// joinRun runs swdt join (with args) -o json.
func (n *node) joinRun(args ...string) (int, joinDoc) {
	n.t.Helper()
	code, out, _ := n.swdt(append([]string{"join", "-o", "json"}, args...)...)
	var doc joinDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) != 1 {
		n.t.Fatalf("swdt join: exit %d, %v:\n%s", code, err, out)
	}
	return code, doc
}

// node reads the Node object; nil when there is none.
func clusterNode(t *testing.T, cl *clustertest.Cluster) *corev1.Node {
	t.Helper()
	nd, err := cl.Client.CoreV1().Nodes().Get(context.Background(), joinNodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return nd
}

// waitIssuedCSR waits until the control plane has approved and issued a
// kubelet client certificate requested with a bootstrap token.
func waitIssuedCSR(t *testing.T, cl *clustertest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for {
		csrs, err := cl.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, csr := range csrs.Items {
				approved := false
				for _, c := range csr.Status.Conditions {
					approved = approved || c.Type == certificatesv1.CertificateApproved
				}
				if strings.HasPrefix(csr.Spec.Username, "system:bootstrap:") && approved && len(csr.Status.Certificate) > 0 &&
					csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no kubelet client CSR of the bootstrap token was approved and issued (%v)", err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// TestJoinRealKubelet: swdt join installs the real kubelet.exe and
// registers it as a Windows service (--windows-service) in Wine's service
// control manager, run by kube-log-runner.exe of the same release as
// upstream's Windows nodes run it: kube-log-runner is the service's
// process, the kubelet below it talks to the service control manager and
// its output goes to C:\var\log\kubelet\kubelet.log, which swdt logs
// reads.
//
// On a fresh node the kubelet starts, validates its configuration, reaches
// its runtime and performs the TLS bootstrap with swdt's bootstrap token:
// the control plane approves and issues its CSR. Wine 8 stops it there:
// its CreateSymbolicLinkW does nothing and reports success, and the
// kubelet's certificate store keeps the issued certificate behind a
// symbolic link (kubelet-client-current.pem), so the Node never registers
// and the join fails, naming the Node and the kubelet's log, where swdt
// logs shows the kubelet's lines (docs/wine.md). swdt join --reset cleans
// up.
//
// The node then gets the credentials a joined kubelet has (a kubelet.conf
// with its client certificate, as after an earlier join): swdt join
// installs and registers the kubelet, which registers its Node with its
// version. A second join changes nothing; a swap to a developer's build
// passes the cluster check; a build that never registers is rolled back;
// swdt status shows the Node beside the service; swdt join --reset removes
// the service, the files and the Node.
func TestJoinRealKubelet(t *testing.T) {
	setup(t)
	kubelet, err := os.ReadFile(clustertest.Binary(t, "kubelet.exe"))
	if err != nil {
		t.Fatal(err)
	}
	dev, err := os.ReadFile(clustertest.Binary(t, "kubelet-dev.exe"))
	if err != nil {
		t.Fatal(err)
	}
	runner, err := os.ReadFile(clustertest.Binary(t, "kube-log-runner.exe"))
	if err != nil {
		t.Fatal(err)
	}
	cl := clustertest.Start(t)
	cri := clustertest.StartCRI(t)
	n := newNode(t)
	n.write("kubelet.exe", kubelet)
	n.write("kube-log-runner.exe", runner)
	n.writeConfig(joinSpec(cl.Kubeconfig, cri, clustertest.Version, "20s"))

	code, doc := n.joinRun()
	// kube-log-runner (the service's process) runs kubelet.exe, which
	// talks to Wine's service control manager itself; its stderr is in
	// the log file that the failed join names.
	logsCode, logs, _ := n.swdt("logs", "wine", "kubelet", "-n", "1000")
	if got := doc.Nodes[0]; code == exitcode.OK || got.Result != "failed" || !strings.Contains(got.Error, "no Node object registered within 20s") ||
		!strings.Contains(got.Error, `see swdt logs wine kubelet (C:\var\log\kubelet\kubelet.log`) {
		t.Fatalf("join on a fresh node under Wine: exit %d, %+v", code, got)
	}
	if logsCode != exitcode.OK || !strings.Contains(logs, `"Kubelet version"`) {
		t.Fatalf("swdt logs kubelet after the failed join: exit %d\n%s", logsCode, logs)
	}
	waitIssuedCSR(t, cl)
	if code, doc := n.joinRun("--reset"); code != exitcode.OK || doc.Nodes[0].Result != "removed" {
		t.Fatalf("join --reset after the bootstrap: exit %d, %+v", code, doc.Nodes[0])
	}

	creds, err := cl.NodeKubeconfig(joinNodeName)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.ts.Node().MkdirAll(`C:\etc\kubernetes`); err != nil {
		t.Fatal(err)
	}
	if err := n.ts.Node().WriteFile(`C:\etc\kubernetes\kubelet.conf`, creds); err != nil {
		t.Fatal(err)
	}
	n.writeConfig(joinSpec(cl.Kubeconfig, cri, clustertest.Version, "3m"))
	code, doc = n.joinRun()
	got := doc.Nodes[0]
	if code != exitcode.OK || got.Result != "changed" || !got.Node.Registered || got.Node.KubeletVersion != clustertest.Version || got.Node.OS != "windows" {
		t.Fatalf("join: exit %d, %+v", code, got)
	}
	nd := clusterNode(t, cl)
	if nd == nil || nd.Labels["example.com/tier"] != "wine" || nd.Labels["kubernetes.io/os"] != "windows" {
		t.Fatalf("Node after the join: %+v", nd)
	}

	if code, doc := n.joinRun(); code != exitcode.OK || doc.Nodes[0].Result != "unchanged" || len(doc.Nodes[0].FilesChanged) != 0 {
		t.Fatalf("second join: exit %d, %+v", code, doc.Nodes[0])
	}

	// A developer's build: the cluster confirms it.
	n.write("kubelet.exe", dev)
	n.writeConfig(joinSpec(cl.Kubeconfig, cri, devVersion, "3m"))
	if code, acts := n.kubeActions(); code != exitcode.OK || acts["kubelet"] != "updated" {
		t.Fatalf("swap to the developer's build: exit %d, %v", code, acts)
	}
	if v := clusterNode(t, cl).Status.NodeInfo.KubeletVersion; v != devVersion {
		t.Fatalf("the Node reports kubelet %s after a confirmed swap, want %s", v, devVersion)
	}

	// A build that runs as a service and never registers: rolled back.
	n.winsvc("kubelet.exe", "")
	n.writeConfig(joinSpec(cl.Kubeconfig, cri, clustertest.Version, "20s"))
	if code, acts := n.kubeActions(); code == exitcode.OK || acts["kubelet"] != "rolled-back" {
		t.Fatalf("swap to a build that never registers: exit %d, %v", code, acts)
	}
	cl.WaitKubeletVersion(t, joinNodeName, devVersion)

	code, out, _ := n.swdt("status", "-o", "json")
	var st struct {
		Nodes []struct {
			Binaries []struct {
				Name, Status, Source string
				ClusterNode          *struct {
					Registered     bool
					KubeletVersion string
					Ready          string
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 || len(st.Nodes) != 1 || len(st.Nodes[0].Binaries) != 2 || st.Nodes[0].Binaries[1].Name != "kubelet" {
		t.Fatalf("status: exit %d, %v\n%s", code, err, out)
	}
	if b := st.Nodes[0].Binaries[1]; b.Status != "Running" || b.ClusterNode == nil || b.ClusterNode.KubeletVersion != devVersion || b.ClusterNode.Ready != "False" {
		t.Errorf("status of the kubelet: %+v %+v", b, b.ClusterNode)
	}

	code, doc = n.joinRun("--reset")
	if code != exitcode.OK || doc.Nodes[0].Result != "removed" || doc.Nodes[0].Node.Registered {
		t.Fatalf("join --reset: exit %d, %+v", code, doc.Nodes[0])
	}
	if nd := clusterNode(t, cl); nd != nil {
		t.Errorf("the Node is still there after --reset: %+v", nd.Status.NodeInfo)
	}
	for _, p := range []string{`C:\var\lib\kubelet\config.yaml`, `C:\etc\kubernetes\kubelet.conf`, `C:\etc\kubernetes\pki\ca.crt`} {
		if n.ts.Node().Exists(p) {
			t.Errorf("%s is still on the node after --reset", p)
		}
	}
}
