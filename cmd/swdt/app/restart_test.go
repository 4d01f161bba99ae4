package app

import (
	"context"
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// restartFile is a one-node file whose kubelet provisioner has a health
// check on port.
func restartFile(t *testing.T, ts *simnode.TestServer, port string) string {
	return writeNodeFile(t, t.TempDir(), nodeHeader("winworker", ts.Credentials())+`  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
      healthCheck:
        tcpPort: `+port+`
`)
}

func TestRestart(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := restartFile(t, ts, "10250")
	n := ts.Node()
	pid := func(name string) int {
		t.Helper()
		svc, err := n.Service(name)
		if err != nil {
			t.Fatal(err)
		}
		if svc.Status != simnode.StatusRunning {
			t.Errorf("%s is %s", name, svc.Status)
		}
		return svc.PID
	}

	t.Run("kubelet and its dependent", func(t *testing.T) {
		kubelet, proxy, containerd := pid("kubelet"), pid("kube-proxy"), pid("containerd")
		code, out, errOut := run(t, "restart", "-c", file, "winworker", "kubelet", "--settle", "0")
		if code != exitcode.OK {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		if pid("kubelet") == kubelet || pid("kube-proxy") == proxy {
			t.Errorf("kubelet or kube-proxy kept its process")
		}
		if pid("containerd") != containerd {
			t.Errorf("containerd was restarted too")
		}
		for _, want := range []string{"kubelet", "kube-proxy (dependent)", "Running"} {
			if !strings.Contains(out, want) {
				t.Errorf("table lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("json, the file's only node, a stopped service is started", func(t *testing.T) {
		if err := n.StopService("kube-proxy"); err != nil {
			t.Fatal(err)
		}
		if !waitFor(t, func() bool {
			svc, err := n.Service("kube-proxy")
			return err == nil && svc.Status == simnode.StatusStopped
		}) {
			t.Fatal("kube-proxy never stopped")
		}
		before := pid("containerd")
		code, out, errOut := run(t, "restart", "-c", file, "-o", "json", "containerd", "kube-proxy", "--settle", "0")
		if code != exitcode.OK {
			t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
		}
		doc := decodeJSON[report.Restart](t, out)
		if doc.Kind != report.KindRestart || doc.Result != report.Changed || doc.Node != "winworker" || len(doc.Services) != 2 {
			t.Fatalf("document: %s", out)
		}
		c := doc.Services[0]
		if c.Service != "containerd" || c.PIDBefore != before || c.PIDAfter == before || c.PIDAfter != pid("containerd") || c.Status != "Running" {
			t.Errorf("containerd = %+v (was %d)", c, before)
		}
		if p := doc.Services[1]; p.PIDBefore != 0 || p.PIDAfter == 0 || p.Status != "Running" {
			t.Errorf("kube-proxy = %+v, want started", p)
		}
		pid("kubelet")
	})
	t.Run("no such service", func(t *testing.T) {
		before := ts.State()
		code, _, errOut := run(t, "restart", "-c", file, "winworker", "kubelet", "nosuch")
		if code != exitcode.Usage || !strings.Contains(errOut, "service nosuch does not exist on the node; nothing was stopped") {
			t.Errorf("exit %d\n%s", code, errOut)
		}
		if ts.State().Services["kubelet"].PID != before.Services["kubelet"].PID {
			t.Errorf("kubelet was restarted")
		}
	})
	t.Run("no service", func(t *testing.T) {
		if code, _, errOut := run(t, "restart", "-c", file, "winworker"); code != exitcode.Usage || !strings.Contains(errOut, "name the services to restart") {
			t.Errorf("exit %d\n%s", code, errOut)
		}
	})
	t.Run("a failing health check", func(t *testing.T) {
		bad := restartFile(t, ts, "12345")
		code, _, errOut := run(t, "restart", "-c", bad, "kubelet", "--settle", "0", "--health-timeout", "300ms")
		if code != exitcode.Failure || !strings.Contains(errOut, "restarted, but not running: kubelet: health check failed") {
			t.Errorf("exit %d\n%s", code, errOut)
		}
	})
}

// A first Ctrl-C lets the restart finish (the services run again) and
// exits 130.
func TestRestartInterrupted(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithFaults(simnode.Faults{OpLatencyMS: map[string]int{ops.ServiceRestart.Name: 1000}}))
	file := restartFile(t, ts, "10250")
	before := ts.State().Services["kubelet"].PID
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := make(fakeSignals, 1)
	var out, errOut lockedBuffer
	codes := make(chan int, 1)
	go func() {
		codes <- runEnv(ctx, &env{streams: Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, notify: fake.notify},
			[]string{"restart", "-c", file, "kubelet", "--settle", "0"})
	}()
	sigs := <-fake
	if !waitFor(t, func() bool { return strings.Contains(errOut.String(), "restarting kubelet") }) {
		t.Fatalf("never restarting:\n%s", errOut.String())
	}
	sigs <- os.Interrupt
	cancel() // what main's NotifyContext does on the same Ctrl-C
	if code := <-codes; code != exitcode.Interrupted {
		t.Errorf("exit %d, want %d\n%s", code, exitcode.Interrupted, errOut.String())
	}
	if !strings.Contains(errOut.String(), "the restart in progress finished first") {
		t.Errorf("stderr:\n%s", errOut.String())
	}
	if svc := ts.State().Services["kubelet"]; svc.Status != simnode.StatusRunning || svc.PID == before {
		t.Errorf("kubelet after the interrupted restart: %s, PID %d (was %d)", svc.Status, svc.PID, before)
	}
}
