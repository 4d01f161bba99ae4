package simnode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/ops"
)

// testAgentPath is where installAgent puts the agent (set by it).
var testAgentPath string

// installAgent puts the agent on the node.
func installAgent(t testing.TB, ts *TestServer) {
	t.Helper()
	testAgentPath = ts.InstallAgent()
}

// callOp runs op over SSH with ex as swdt does: the agent's command line,
// the request as JSON on stdin, the result envelope on stdout. A failure
// the agent reports is an *OpFailure.
func callOp[Req, Resp any](ctx context.Context, ex *SSHExecer, op ops.Op[Req, Resp], req Req) (Resp, error) {
	var resp Resp
	raw, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	var stdout, stderr bytes.Buffer
	if _, err := ex.Exec(ctx, ops.CommandLine(testAgentPath, op.Name), bytes.NewReader(raw), &stdout, &stderr); err != nil {
		return resp, err
	}
	env, err := ops.ParseEnvelope(stdout.Bytes())
	if err != nil {
		return resp, errors.Join(err, errors.New(stderr.String()))
	}
	if !env.OK {
		return resp, &OpFailure{Kind: env.Error.Kind, Message: env.Error.Message}
	}
	return resp, json.Unmarshal(env.Data, &resp)
}

func TestNodeFactsOverSSH(t *testing.T) {
	ts := StartTest(t, WithAccount(Account{Name: "developer"}))
	installAgent(t, ts)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	tests := []struct {
		user    string
		isAdmin bool
	}{
		{"Administrator", true},
		{"developer", false},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			facts, err := callOp(ctx, ts.ExecerAs(tc.user), ops.NodeFacts, ops.NodeFactsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if facts.Hostname != "WIN-SIMNODE01" || facts.ProductName != "Windows Server 2022 Datacenter" || facts.DisplayVersion != "21H2" ||
				facts.CurrentBuild != "20348" || facts.UBR != 2227 || facts.Username != `WIN-SIMNODE01\`+tc.user || facts.IsAdmin != tc.isAdmin {
				t.Errorf("facts = %+v", facts)
			}
		})
	}
}

func TestUBRComesFromRegistry(t *testing.T) {
	ts := StartTest(t)
	installAgent(t, ts)
	if err := ts.Node().SetRegistryDWord(`HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion`, "UBR", 2340); err != nil {
		t.Fatal(err)
	}
	facts, err := callOp(context.Background(), ts.Execer(), ops.NodeFacts, ops.NodeFactsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if facts.UBR != 2340 {
		t.Errorf("UBR = %d, want 2340", facts.UBR)
	}
}

func TestOtherCommandsAreNotRecognized(t *testing.T) {
	ts := StartTest(t)
	ex := ts.Execer()
	tests := []struct {
		cmd, word string
	}{
		{"whoami", "whoami"},
		{"sc.exe query kubelet", "sc.exe"},
		{`C:\k\kubelet.exe --version`, `C:\k\kubelet.exe`},
		// The agent's command line before the agent was uploaded.
		{ops.CommandLine(testAgentPath, ops.NodeFacts.Name), testAgentPath},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		status, err := ex.Exec(context.Background(), tc.cmd, nil, &stdout, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		want := "'" + tc.word + "' is not recognized as an internal or external command,\r\noperable program or batch file.\r\n"
		if status != 1 || stderr.String() != want || stdout.Len() != 0 {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 1, \"\", %q", tc.cmd, status, stdout.String(), stderr.String(), want)
		}
	}
}

// An agent whose stdin is never closed never finishes, as on Windows: it
// reads its request to EOF.
func TestOpWaitsForStdinEOF(t *testing.T) {
	ts := StartTest(t)
	installAgent(t, ts)
	ex := ts.Execer()
	pr, pw := ioPipe()
	defer pw.Close()
	go pw.Write([]byte("{}")) // never closed
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	_, err := ex.Exec(ctx, ops.CommandLine(testAgentPath, ops.NodeFacts.Name), pr, &stdout, &stderr)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context deadline (the op must not finish before stdin EOF)", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("op answered before stdin was closed: %q", stdout.String())
	}

	// The same request with stdin closed answers.
	stdout.Reset()
	status, err := ex.Exec(context.Background(), ops.CommandLine(testAgentPath, ops.NodeFacts.Name), strings.NewReader("{}"), &stdout, &stderr)
	if err != nil || status != 0 {
		t.Fatalf("status %d, err %v, stderr %q", status, err, stderr.String())
	}
	if _, err := ops.ParseEnvelope(stdout.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func TestFailedOpHasEnvelopeAndExitStatus(t *testing.T) {
	ts := StartTest(t, WithFaults(Faults{FailOps: []string{"node-facts"}}))
	installAgent(t, ts)
	ex := ts.Execer()
	var stdout, stderr bytes.Buffer
	status, err := ex.Exec(context.Background(), ops.CommandLine(testAgentPath, ops.NodeFacts.Name), strings.NewReader("{}"), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	env, err := ops.ParseEnvelope(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if env.OK || env.Error.Kind != "injected" || !strings.Contains(env.Error.Message, "injected by simnode") {
		t.Errorf("envelope = %+v, want an injected failure", env)
	}
	// The fault fires once.
	if _, err := callOp(context.Background(), ex, ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
		t.Errorf("second call: %v", err)
	}
}

func TestUnknownOpIsReported(t *testing.T) {
	ts := StartTest(t)
	installAgent(t, ts)
	var stdout, stderr bytes.Buffer
	status, err := ts.Execer().Exec(context.Background(), ops.CommandLine(testAgentPath, "no-such-op"), strings.NewReader("{}"), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	env, err := ops.ParseEnvelope(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if status != 1 || env.OK || env.Error.Kind != "unknown-op" {
		t.Errorf("status %d, envelope %+v", status, env)
	}
}

func TestPasswordAuth(t *testing.T) {
	ts := StartTest(t, WithPassword("s3cret"), WithOptions(func(o *Options) { o.AuthorizedKeys = nil }))
	dial := func(pw string) error {
		c, err := ssh.Dial("tcp", ts.Addr(), &ssh.ClientConfig{User: "administrator", Auth: []ssh.AuthMethod{ssh.Password(pw)},
			HostKeyCallback: ssh.FixedHostKey(ts.HostKey()), Timeout: 5 * time.Second})
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial("s3cret"); err != nil {
		t.Errorf("right password (user name case-insensitive): %v", err)
	}
	if err := dial("wrong"); err == nil {
		t.Error("wrong password accepted")
	}
}

// Like sshd, which ends a session's processes when the session ends, an op
// whose client went away is stopped: a later op answers, and the server
// shuts down without waiting for the abandoned one.
func TestOpEndsWithItsSession(t *testing.T) {
	ts := StartTest(t, WithFaults(Faults{OpLatencyMS: map[string]int{"node-facts": int(time.Hour.Milliseconds())}}))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	installAgent(t, ts)
	_, err := callOp(ctx, ts.Execer(), ops.NodeFacts, ops.NodeFactsRequest{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if err := ts.UpdateFaults(func(f *Faults) { f.OpLatencyMS = nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := callOp(context.Background(), ts.Execer(), ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
		t.Fatalf("a later op: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- ts.Close() }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("the server waited for an op whose session had ended")
	}
}
