package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

const (
	testWins        = `C:\etc\rancher\wins\wins.exe`
	testWinsConfig  = `C:\etc\rancher\wins\config`
	testWinsSmoke   = `C:\etc\rancher\wins\swdt-smoke.exe`
	testWinsRenamed = `C:\etc\rancher\wins\rancher-wins-swdt-smoke.exe`
)

// fastWins shortens the wins handlers' waits so that the hung and
// ignored-stop cases take well under a second each. simnode's services
// start and stop in 200 ms.
func fastWins(t *testing.T) {
	agent.ShortenWinsLimits(t, agent.WinsLimits{Call: 400 * time.Millisecond, Register: 600 * time.Millisecond,
		Stop: 600 * time.Millisecond, Exit: 500 * time.Millisecond, Settle: 300 * time.Millisecond})
}

// startWinsTest starts a simnode with short wins limits.
func startWinsTest(t *testing.T) (*simnode.TestServer, winos.OS) {
	t.Helper()
	fastWins(t)
	ts := simnode.StartTest(t)
	return ts, ts.Node().OS()
}

// installWins places a wins binary with content and a config whitelisting
// the smoke path (in another case, as Windows paths compare), registers
// the service through the handlers and, when start is set, starts it.
func installWins(t *testing.T, ts *simnode.TestServer, content string, start bool) {
	t.Helper()
	n, w := ts.Node(), ts.Node().OS()
	if err := n.MkdirAll(`C:\etc\rancher\wins`); err != nil {
		t.Fatal(err)
	}
	if err := n.WriteFile(testWins, []byte(content)); err != nil {
		t.Fatal(err)
	}
	cfg := "white_list:\n  processPaths:\n  - " + strings.ToUpper(testWinsSmoke) + "\n"
	if _, err := agent.Call(context.Background(), w, ops.WinsConfigWrite, ops.WinsConfigWriteRequest{Path: testWinsConfig, Content: cfg}); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Call(context.Background(), w, ops.WinsRegister, ops.WinsRegisterRequest{Binary: testWins, ConfigPath: testWinsConfig}); err != nil {
		t.Fatal(err)
	}
	if start {
		startWins(t, ts)
	}
}

// startWins starts the registered service and waits until it runs.
func startWins(t *testing.T, ts *simnode.TestServer) {
	t.Helper()
	if err := ts.Node().StartService(ops.WinsService); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.Node().WaitService(context.Background(), ops.WinsService, simnode.StatusRunning, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

// winsProcesses lists the node's rancher-wins-* processes.
func winsProcesses(t *testing.T, ts *simnode.TestServer) []simnode.Process {
	t.Helper()
	var out []simnode.Process
	for _, p := range ts.Node().Processes() {
		if strings.Contains(strings.ToLower(p.Image), `\`+ops.WinsProcessPrefix) {
			out = append(out, p)
		}
	}
	return out
}

// failure returns err's kind and message when it is an agent failure.
func failure(t *testing.T, err error) (kind ops.Kind, message string) {
	t.Helper()
	var f *agent.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not an agent failure", err)
	}
	return f.Kind, f.Message
}

// wrappedOS is the simulated node with some programs answered by the
// test: what a real wins or sc.exe can print but simnode's do not.
type wrappedOS struct {
	winos.OS
	run func(cmd winos.Command) (winos.Result, bool)
	// recoveries, when set, records every SetRecovery.
	recoveries *[]winos.Recovery
}

func (o wrappedOS) SetRecovery(name string, r winos.Recovery) error {
	if o.recoveries != nil {
		*o.recoveries = append(*o.recoveries, r)
	}
	return o.OS.SetRecovery(name, r)
}

func (o wrappedOS) Run(ctx context.Context, cmd winos.Command) (winos.Result, error) {
	if res, ok := o.run(cmd); ok {
		return res, nil
	}
	return o.OS.Run(ctx, cmd)
}

// isWins reports whether cmd runs wins with the given subcommand.
func isWins(cmd winos.Command, sub ...string) bool {
	return strings.EqualFold(cmd.Path, testWins) && len(cmd.Args) >= len(sub) && strings.EqualFold(strings.Join(cmd.Args[:len(sub)], " "), strings.Join(sub, " "))
}
