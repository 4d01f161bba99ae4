package daytwo

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// simNode starts a simulated node and returns its spec and a connector
// that counts the connections it makes. Its host key policy is
// insecure, so every connection warns.
func simNode(t *testing.T) (*v1alpha1.Node, fleet.Connector, *int) {
	t.Helper()
	ts := simnode.StartTest(t)
	spec := &v1alpha1.Node{}
	spec.Name, spec.Spec.Credentials = "win", ts.Credentials()
	spec.Spec.Credentials.HostKeyPolicy = v1alpha1.HostKeyPolicyInsecure
	connects := 0
	return spec, func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (*node.Node, error) {
		connects++
		return node.Connect(ctx, *spec, node.ConnectOptions{Warn: warn})
	}, &connects
}

func TestExec(t *testing.T) {
	spec, connect, _ := simNode(t)
	unreachable := errors.New("connect: unreachable")
	tests := []struct {
		name    string
		command []string
		timeout time.Duration
		connect fleet.Connector
		code    int
		out     string
		err     string
	}{
		{name: "output and exit status", command: []string{"cmd.exe", "/c", "echo", "a;b"}, out: "a;b\r\n"},
		{name: "any status up to 255", command: []string{"cmd.exe", "/c", "exit", "/b", "255"}, code: 255},
		{name: "a status above 255", command: []string{"cmd.exe", "/c", "exit", "/b", "3221225477"},
			err: "node win: cmd.exe exited with status 3221225477 (0xC0000005)"},
		{name: "too long", command: []string{"timeout.exe", "/t", "30"}, timeout: time.Second,
			err: "node win: timeout.exe ran longer than --timeout 1s and was stopped"},
		{name: "no such program", command: []string{"crictl"}, err: "crictl: no such program on the node"},
		{name: "unreachable", command: []string{"hostname"}, err: unreachable.Error(),
			connect: func(context.Context, *v1alpha1.Node, func(string)) (*node.Node, error) { return nil, unreachable }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			var warnings []string
			opts := ExecOptions{Timeout: cmp.Or(tt.timeout, time.Minute), Stdout: &stdout, Stderr: &stderr,
				Warn: func(msg string) { warnings = append(warnings, msg) }}
			c := tt.connect
			if c == nil {
				c = connect
			}
			code, err := Exec(t.Context(), spec, c, tt.command, opts)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if err != nil && tt.connect == nil && !strings.HasPrefix(err.Error(), "node win: ") {
				t.Errorf("error %q does not name the node", err)
			}
			if tt.connect == nil && (len(warnings) == 0 || !strings.HasPrefix(warnings[0], "node win: ") || !strings.Contains(warnings[0], "not verifying the host key")) {
				t.Errorf("warnings %q, want the insecure policy's, naming the node", warnings)
			}
			if code != tt.code || stdout.String() != tt.out {
				t.Errorf("exit %d, stdout %q; want %d, %q", code, stdout.String(), tt.code, tt.out)
			}
		})
	}
}

func TestLogs(t *testing.T) {
	spec, connect, connects := simNode(t)
	bare := *spec
	spec.Spec.Kubernetes.Provisioners = []v1alpha1.ProvisionerSpec{{Name: "kubelet"}}
	tests := []struct {
		name     string
		spec     *v1alpha1.Node
		opts     LogsOptions
		reads    int // the follow ends (ctx is cancelled) after this many
		services []string
		err      string
		code     int
	}{
		{name: "the node's services", spec: spec, reads: 1, services: []string{"kubelet"}},
		{name: "services named", spec: spec, opts: LogsOptions{Services: []string{"kube-proxy", "kubelet"}}, reads: 1,
			services: []string{"kube-proxy", "kubelet"}},
		{name: "follow until cancelled", spec: spec, opts: LogsOptions{Follow: true, Interval: 10 * time.Millisecond}, reads: 3,
			services: []string{"kubelet"}},
		{name: "no service to name", spec: &bare, err: "node win has no provisioners and no wins", code: exitcode.Usage},
		{name: "a service the node does not have", spec: spec, opts: LogsOptions{Services: []string{"nosuch"}},
			err: "node win has no service nosuch", code: exitcode.Failure},
		{name: "an absent service among others", spec: spec, opts: LogsOptions{Services: []string{"nosuch", "kubelet"}}, reads: 1,
			services: []string{"kubelet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			before := *connects
			tt.opts.Lines, tt.opts.Since, tt.opts.Warn = 5, time.Hour, func(string) {}
			var reads []Read
			err := Logs(ctx, tt.spec, connect, tt.opts, func(r Read) error {
				if reads = append(reads, r); len(reads) == tt.reads && tt.opts.Follow {
					cancel()
				}
				return nil
			})
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err) || exitcode.Code(err) != tt.code) {
				t.Fatalf("error %v (exit %d), want %q (exit %d)", err, exitcode.Code(err), tt.err, tt.code)
			}
			if len(reads) != tt.reads {
				t.Fatalf("%d reads, want %d", len(reads), tt.reads)
			}
			for i, r := range reads {
				var got []string
				for _, s := range r.Services {
					got = append(got, s.Service)
				}
				if r.Node != "win" || r.First != (i == 0) || !reflect.DeepEqual(got, tt.services) {
					t.Errorf("read %d: node %s, first %v, services %v; want win, %v, %v", i, r.Node, r.First, got, i == 0, tt.services)
				}
			}
			if tt.code == exitcode.Usage && *connects != before {
				t.Errorf("the node was contacted")
			}
		})
	}
}

func TestNodeServices(t *testing.T) {
	tests := []struct {
		name         string
		provisioners []string
		wins         bool
		want         []string
	}{
		{name: "none"},
		{name: "provisioners in order, once each", provisioners: []string{"containerd", "kubelet", "containerd"}, want: []string{"containerd", "kubelet"}},
		{name: "wins last", provisioners: []string{"kubelet"}, wins: true, want: []string{"kubelet", "rancher-wins"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec v1alpha1.Node
			for _, p := range tt.provisioners {
				spec.Spec.Kubernetes.Provisioners = append(spec.Spec.Kubernetes.Provisioners, v1alpha1.ProvisionerSpec{Name: p})
			}
			if tt.wins {
				spec.Spec.Wins = &v1alpha1.WinsSpec{}
			}
			if got := NodeServices(&spec); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("nodeServices = %v, want %v", got, tt.want)
			}
		})
	}
}

// A restart whose connection was lost is read back from the node: a
// service in another process than before was restarted; one still in its
// process from before was not reached (read until the wait ends), and
// without a process from before, Running is all that can be said.
func TestRestartReadBack(t *testing.T) {
	spec, connect, _ := simNode(t)
	n, err := connect(context.Background(), spec, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	now, err := n.ServiceStatus(context.Background(), []string{"kubelet"})
	if err != nil || len(now) != 1 || now[0].PID == 0 {
		t.Fatalf("kubelet's status: %v, %v", now, err)
	}
	pid := now[0].PID
	tests := []struct {
		name      string
		before    []ops.ServiceState
		wantAfter int
		// notReached is an error that says the restart did not reach it.
		notReached bool
	}{
		{name: "another process than before", before: []ops.ServiceState{{Service: "KUBELET", PID: pid + 4}}, wantAfter: pid},
		{name: "the process from before", before: now, wantAfter: pid, notReached: true},
		{name: "no process from before", wantAfter: pid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A service the restart did not reach is read until the wait
			// ends: here the test's.
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var resp ops.ServiceRestartResponse
			if err := restartReadBack(ctx, n, []string{"kubelet"}, tt.before, &resp, ops.ServiceRestartRequest{}); err != nil {
				t.Fatal(err)
			}
			if len(resp.Services) != 1 || resp.Services[0].PIDAfter != tt.wantAfter || resp.Services[0].PIDBefore != pidBefore(tt.before, "kubelet") {
				t.Errorf("services %+v, want kubelet from PID %d to %d", resp.Services, pidBefore(tt.before, "kubelet"), tt.wantAfter)
			}
			reached := len(resp.NotStarted) == 0
			if reached == tt.notReached || (tt.notReached && !strings.Contains(resp.NotStarted[0].Error, "the restart did not reach it")) {
				t.Errorf("not started: %+v; want the restart not to have reached it: %t", resp.NotStarted, tt.notReached)
			}
		})
	}
}
