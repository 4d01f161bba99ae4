package wine

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
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

// oneService is a node file's kubernetes part with one service, which
// swdt registers.
const oneService = `  kubernetes:
    provisioners:
    - name: swdt-wine
      sourceURL: ./a.exe
      destination: 'C:\k\swdt-wine.exe'
      register: {}
`

// kube runs swdt kubernetes with timeouts for Wine.
func (n *node) kube(args ...string) (int, string, string) {
	return n.swdt(append([]string{"kubernetes", "--stop-timeout", "20s", "--start-timeout", "30s", "--settle", "1s", "--health-timeout", "10s"}, args...)...)
}

// kubeActions are the provisioners' actions of swdt kubernetes -o json.
func (n *node) kubeActions(args ...string) (int, map[string]string) {
	n.t.Helper()
	code, provs, _ := n.kubeJSON(args...)
	got := map[string]string{}
	for _, p := range provs {
		got[p.Name] = p.Action
	}
	return code, got
}

// provisionerDoc is a provisioner of swdt kubernetes -o json.
type provisionerDoc struct {
	Name, Action, Transfer string
	Reconfigured           bool
	Drift                  []string
}

// kubeJSON runs swdt kubernetes -o json and returns its provisioners and
// what it printed on stderr.
func (n *node) kubeJSON(args ...string) (int, []provisionerDoc, string) {
	n.t.Helper()
	code, out, errOut := n.kube(append(args, "-o", "json")...)
	if code != 0 {
		n.t.Logf("its stderr:\n%s", errOut)
	}
	var doc struct {
		Nodes []struct{ Provisioners []provisionerDoc }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Nodes) != 1 {
		n.t.Fatalf("exit %d, %v:\n%s", code, err, out)
	}
	return code, doc.Nodes[0].Provisioners, errOut
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
	n.writeConfig(oneService + `      healthCheck:
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

// The real agent decodes what swdt sends encoded (loopback sends files as
// they are unless --compress asks): a new build compressed, then rebuilds
// as patches against the build on the node, whose hundreds of short
// copies from the reference are read through Apply's page cache and
// whose long one (the program itself) is read where it is; the service
// then runs the build swdt has. A decode that went wrong would show as
// the file sent again compressed.
func TestKubernetesEncodedDecodedByTheAgent(t *testing.T) {
	n := newNode(t)
	// Data after the PE image (Windows ignores it, winsvc reads its
	// settings from the end): 2 MiB that a rebuild changes a word of
	// every 4 KiB, as a linker changes addresses.
	junk := make([]byte, 2<<20)
	_, _ = io.ReadFull(rand.NewChaCha8([32]byte{7}), junk)
	steps := []struct {
		name     string
		spec     string // the node file's kubernetes part
		transfer string
		oneOp    bool
	}{
		{"a new build, registered", oneService, "compressed", false},
		// The service's display name is its name (Wine's SCM keeps none
		// when CreateService is given none): no drift to correct.
		{"a rebuild, as a patch", oneService, "patch", false},
		// Without register: (a provisioner with one is inspected on every
		// run, against the config it asks for) the node is as the last
		// run left it: the swap op takes the lock, checks the services
		// and files, and decodes the patch as it follows the request.
		{"a rebuild in one op", strings.Replace(oneService, "      register: {}\n", "", 1), "patch", true},
	}
	for i, s := range steps {
		if i > 0 {
			for j := 100; j+4 <= len(junk); j += 4 << 10 {
				junk[j]++
			}
		}
		n.writeConfig(s.spec)
		n.write("a.exe", append(append(append([]byte(nil), shared.winsvc...), junk...), fmt.Sprintf("\nwinsvc:build=%d\n", i)...))
		code, provs, errOut := n.kubeJSON("--compress", "1")
		if code != 0 || len(provs) != 1 || provs[0].Action != "updated" || provs[0].Transfer != s.transfer || provs[0].Reconfigured || len(provs[0].Drift) > 0 {
			t.Fatalf("%s: exit %d %+v, want updated, sent as %s, nothing reconfigured", s.name, code, provs, s.transfer)
		}
		if oneOp := !strings.Contains(errOut, "inspecting"); oneOp != s.oneOp {
			t.Errorf("%s: in one op %v, want %v", s.name, oneOp, s.oneOp)
		}
		if got := n.status()["swdt-wine"]; got != "Running/in-sync" {
			t.Fatalf("%s: status %s, want Running/in-sync", s.name, got)
		}
	}
}
