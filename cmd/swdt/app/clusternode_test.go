package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// --cluster-node: the one-node verbs reach a Node of the rollout file's
// cluster through the real API server (its HostProcess pod's pods/exec
// and pods/portforward, to its simulated kubelet) with no SSH
// credentials and no SSH connection: exec runs a program, logs finds the
// kubelet running (it logs nowhere but its events here), cp copies a file
// there and back, status reads the Node, restart of the
// kubelet loses its own stream and reads the kubelet back once the new
// one serves exec (and logs --follow follows on across it), port-forward carries streams to the Node's loopback; a Node
// the cluster lacks and --node beside it are errors that say so.
func TestClusterNodeVerbs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cl := clustertest.Start(t)
	ts := cl.StartKubeletNode(t, "win-01")
	dir := t.TempDir()
	file := rolloutFile(t, dir, cl.Kubeconfig)
	local := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(local, []byte("through the API\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		args     []string
		wantCode int
		// want is in stdout, wantErr in stderr.
		want, wantErr string
		// check, when set, checks what the verb did and printed.
		check func(t *testing.T, out string)
	}{
		// The agent's upload through the API shows as over SSH (its end
		// line follows its start line).
		{name: "logs, the first contact", args: []string{"logs", "-c", file, "--cluster-node", "win-01", "kubelet", "-n", "1"},
			wantErr: "✔ node win-01: upload swdt-agent (first contact)"},
		{name: "exec", args: []string{"exec", "-c", file, "--cluster-node", "win-01", "--", "hostname"}, want: "WIN-01"},
		{name: "logs", args: []string{"logs", "-c", file, "--cluster-node", "win-01", "kubelet", "-n", "5"}, wantErr: "node win-01: kubelet (Running)"},
		{name: "restart the kubelet, which carries the stream", args: []string{"restart", "-c", file, "--cluster-node", "win-01", "kubelet", "--settle", "0"},
			want: "Running", wantErr: "the restart's connection was lost",
			check: func(t *testing.T, out string) {
				// Its process from before was read before the restart.
				_, row, _ := strings.Cut(out, "kubelet")
				if f := strings.Fields(row); len(f) < 2 || f[0] == "-" || f[0] == f[1] {
					t.Errorf("kubelet's PIDs before and after: %v; want two different PIDs", f)
				}
			}},
		{name: "exec after the kubelet's restart", args: []string{"exec", "-c", file, "--cluster-node", "win-01", "hostname"}, want: "WIN-01"},
		{name: "cp to the Node", args: []string{"cp", "-c", file, "--cluster-node", "win-01", local, `win-01:C:\notes.txt`}, wantErr: "node win-01: copied 1 file (16 B)"},
		{name: "cp from the Node", args: []string{"cp", "-c", file, "--cluster-node", "win-01", `:C:\notes.txt`, filepath.Join(dir, "back.txt")}, wantErr: "node win-01: copied 1 file (16 B)",
			check: func(t *testing.T, _ string) {
				if got, err := os.ReadFile(filepath.Join(dir, "back.txt")); err != nil || string(got) != "through the API\n" {
					t.Errorf("the file copied to the Node and back: %q, %v", got, err)
				}
			}},
		{name: "cp naming another node", args: []string{"cp", "-c", file, "--cluster-node", "win-01", local, `win-02:C:\notes.txt`},
			wantCode: exitcode.Usage, wantErr: "the node is win-01 (--cluster-node), not win-02"},
		{name: "status", args: []string{"status", "-c", file, "--cluster-node", "win-01", "-o", "json"}, want: `"hostname": "WIN-01"`},
		{name: "a Node the cluster lacks", args: []string{"exec", "-c", file, "--cluster-node", "win-99", "hostname"},
			wantCode: exitcode.Failure, wantErr: "the cluster has no Node win-99"},
		{name: "with --node", args: []string{"logs", "-c", file, "--node", "workers", "--cluster-node", "win-01"},
			wantCode: exitcode.Usage, wantErr: "--node does not go with it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(out, tt.want) || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, %q in stdout, %q in stderr", code, out, errOut, tt.wantCode, tt.want, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, out)
			}
		})
	}
	// A follow through the API outlives the kubelet's restart: the
	// stream it reads through goes with the kubelet, and it follows on
	// once the new one serves exec.
	t.Run("logs --follow across the kubelet's restart", func(t *testing.T) {
		f := &following{t: t, n: ts.Node(), done: make(chan int)}
		ctx, cancel := context.WithCancel(context.Background())
		f.cancel = cancel
		t.Cleanup(cancel)
		go func() {
			f.done <- Run(ctx, Streams{In: strings.NewReader(""), Out: &f.out, ErrOut: &f.errOut},
				[]string{"logs", "-c", file, "--cluster-node", "win-01", "kubelet", "--follow", "--interval", "100ms"})
		}()
		f.waitFor(&f.errOut, "kubelet (Running)")
		if code, _, errOut := run(t, "restart", "-c", file, "--cluster-node", "win-01", "kubelet", "--settle", "0"); code != exitcode.OK {
			t.Fatalf("restart: exit %d\n%s", code, errOut)
		}
		f.waitFor(&f.errOut, "reconnecting until the node answers again")
		f.waitFor(&f.errOut, "reconnected; following again")
		f.stop()
	})
	t.Run("completion", func(t *testing.T) {
		// A Linux Node is not offered.
		if _, err := cl.Client.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "linux-01",
			Labels: map[string]string{corev1.LabelOSStable: "linux"}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, out, _ := run(t, "__complete", "exec", "-c", file, "--cluster-node", "")
		if got := strings.Fields(out); len(got) < 2 || got[0] != "win-01" || got[1] != ":4" {
			t.Errorf("--cluster-node completes to %q, want win-01 only", out)
		}
	})
	t.Run("port-forward", func(t *testing.T) {
		portForwardTwoPorts(t, "win-01", "-c", file, "--cluster-node", "win-01")
	})
	// ssh is kubectl exec -it: cmd.exe as SYSTEM with a terminal.
	t.Run("ssh", func(t *testing.T) {
		const prompt = `C:\hpc>`
		code, out, errOut := runIn(t, "hostname\r"+"whoami\r"+"exit 3\r", "ssh", "-c", file, "--cluster-node", "win-01")
		if code != 3 {
			t.Fatalf("exit %d, want 3\nstdout: %q\nstderr: %s", code, out, errOut)
		}
		for _, want := range []string{prompt + "hostname\r\nWIN-01\r\n", prompt + "whoami\r\nnt authority\\system", prompt + "exit 3\r\n"} {
			if !strings.Contains(strings.ToLower(out), strings.ToLower(want)) {
				t.Errorf("stdout lacks %q:\n%q", want, out)
			}
		}
		if code, out, errOut := runIn(t, "", "ssh", "-c", file, "--cluster-node", "win-01", "-o", "json", "--", "hostname"); code != exitcode.OK || !strings.Contains(out, `"output": "WIN-01\n"`) {
			t.Errorf("one command: exit %d\n%s\n%s", code, out, errOut)
		}
		// Ctrl-C ends the program with a status the exec protocol cannot
		// carry: it is read from client-go's error.
		if code, _, errOut := runIn(t, "\x03", "ssh", "-c", file, "--cluster-node", "win-01", "--", "timeout", "/t", "30"); code != exitcode.Failure || !strings.Contains(errOut, "exited with status 3221225786 (0xC000013A)") {
			t.Errorf("Ctrl-C to one command: exit %d\n%s", code, errOut)
		}
	})
	if got := ts.Connections(); got != 0 {
		t.Errorf("simnode saw %d SSH connections, want none", got)
	}
}
