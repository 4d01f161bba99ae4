package wine

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

// Two services registered by swdt itself, one in a path with spaces that
// depends on the other.
const kubeSpec = `  kubernetes:
    provisioners:
    - name: swdt-wine
      sourceURL: ./a.exe
      destination: 'C:\k\swdt-wine.exe'
      register:
        args: [--name, a]
    - name: swdt-wine-b
      sourceURL: ./b.exe
      destination: 'C:\Program Files\swdt wine\swdt wine b.exe'
      register:
        displayName: swdt Wine B
        dependsOn: [swdt-wine]
`

// kube runs swdt kubernetes with timeouts for Wine.
func (n *node) kube(args ...string) (int, string, string) {
	return n.swdt(append([]string{"kubernetes", "--stop-timeout", "20s", "--start-timeout", "30s", "--settle", "1s", "--health-timeout", "10s"}, args...)...)
}

// actions are the provisioners' actions of swdt kubernetes -o json.
func (n *node) kubeActions(args ...string) (int, map[string]string) {
	n.t.Helper()
	code, out, errOut := n.kube(append(args, "-o", "json")...)
	if code != 0 {
		n.t.Logf("its stderr:\n%s", errOut)
	}
	var doc struct {
		Nodes []struct {
			Provisioners []struct{ Name, Action string }
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) != 1 {
		n.t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	got := map[string]string{}
	for _, p := range doc.Nodes[0].Provisioners {
		got[p.Name] = p.Action
	}
	return code, got
}

// status returns swdt status -o json's binaries by name: "status/source",
// and their PIDs.
func (n *node) status() map[string]string {
	got, _ := n.statusPIDs()
	return got
}

func (n *node) statusPIDs() (map[string]string, map[string]int) {
	n.t.Helper()
	code, out, _ := n.swdt("status", "-o", "json")
	var doc struct {
		Nodes []struct {
			Binaries []struct {
				Name, Status, Source string
				PID                  int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 || len(doc.Nodes) != 1 {
		n.t.Fatalf("status: exit %d, %v\n%s", code, err, out)
	}
	got, pids := map[string]string{}, map[string]int{}
	for _, b := range doc.Nodes[0].Binaries {
		got[b.Name] = b.Status + "/" + b.Source
		pids[b.Name] = b.PID
	}
	return got, pids
}

func TestKubernetesRegisterSwapRollBack(t *testing.T) {
	n := newNode(t)
	n.writeConfig(kubeSpec)
	n.winsvc("a.exe", "build=a1")
	n.winsvc("b.exe", "build=b1")
	steps := []struct {
		name string
		a, b string // the builds' settings
		code int
		want map[string]string
	}{
		{"register both", "build=a1", "build=b1", 0, map[string]string{"swdt-wine": "updated", "swdt-wine-b": "updated"}},
		{"swap both", "build=a2", "build=b2", 0, map[string]string{"swdt-wine": "updated", "swdt-wine-b": "updated"}},
		{"swap the dependency alone", "build=a3", "build=b2", 0, map[string]string{"swdt-wine": "updated", "swdt-wine-b": "unchanged"}},
		{"a build that exits after Running is rolled back", "build=a4 exit=1", "build=b2", exitcode.Partial,
			map[string]string{"swdt-wine": "rolled-back", "swdt-wine-b": "unchanged"}},
	}
	for _, s := range steps {
		n.winsvc("a.exe", s.a)
		n.winsvc("b.exe", s.b)
		_, before := n.statusPIDs()
		code, got := n.kubeActions()
		if code != s.code || !maps.Equal(got, s.want) {
			t.Fatalf("%s: exit %d %v, want %d %v", s.name, code, got, s.code, s.want)
		}
		// Wine keeps no dependencies: the agent finds them in the
		// registry, and stops and starts the dependent around the swap.
		if _, after := n.statusPIDs(); s.name == "swap the dependency alone" && after["swdt-wine-b"] == before["swdt-wine-b"] {
			t.Errorf("%s: swdt-wine-b still runs as PID %d: it was not stopped with its dependency", s.name, after["swdt-wine-b"])
		}
	}
	// The node runs a3 again: in sync with a local a3.
	n.winsvc("a.exe", "build=a3")
	want := map[string]string{"swdt-wine": "Running/in-sync", "swdt-wine-b": "Running/in-sync"}
	if got := n.status(); !maps.Equal(got, want) {
		t.Errorf("status = %v, want %v", got, want)
	}
	// The event log is read by a PowerShell script, and Wine's
	// powershell.exe is a stub that prints nothing: swdt logs says so.
	if code, _, errOut := n.swdt("logs", "wine", "swdt-wine"); code != 0 || !strings.Contains(errOut, "cannot read the event log") {
		t.Errorf("logs: exit %d", code)
	}
}

func TestKubernetesTCPCheckRollsBack(t *testing.T) {
	n := newNode(t)
	n.writeConfig(`  kubernetes:
    provisioners:
    - name: swdt-wine
      sourceURL: ./a.exe
      destination: 'C:\k\swdt-wine.exe'
      register: {}
      healthCheck:
      - tcpPort: 47123
`)
	for _, s := range []struct {
		settings string
		code     int
		action   string
	}{
		{"build=1 listen=127.0.0.1:47123", 0, "updated"},
		{"build=2", exitcode.Failure, "rolled-back"},
	} {
		n.winsvc("a.exe", s.settings)
		if code, got := n.kubeActions(); code != s.code || got["swdt-wine"] != s.action {
			t.Fatalf("%s: exit %d %v, want %d %s", s.settings, code, got, s.code, s.action)
		}
	}
	n.winsvc("a.exe", "build=1 listen=127.0.0.1:47123")
	if got := n.status(); got["swdt-wine"] != "Running/in-sync" {
		t.Errorf("status = %v", got)
	}
}
