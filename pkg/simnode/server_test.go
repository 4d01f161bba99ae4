package simnode

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/pwsh"
	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

func TestContractEveryOpHasAHandler(t *testing.T) {
	embedded := ops.Names()
	implemented := OpNames()
	for _, name := range embedded {
		if opHandlers[name] == nil {
			t.Errorf("op %s is embedded in pkg/pwsh/ops but simnode has no handler: add it to opTable", name)
		}
	}
	for _, name := range implemented {
		if _, err := ops.Script(name); err != nil {
			t.Errorf("simnode implements op %s, which has no embedded script", name)
		}
	}
}

func TestNodeFactsOverSSH(t *testing.T) {
	ts := StartTest(t, WithAccount(Account{Name: "developer"}))
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
			r := &pwsh.Runner{Exec: ts.ExecerAs(tc.user)}
			facts, err := pwsh.Call(ctx, r, ops.NodeFacts, ops.NodeFactsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			want := ops.NodeFactsResponse{
				Hostname: "WIN-SIMNODE01", ProductName: "Windows Server 2022 Datacenter", DisplayVersion: "21H2",
				CurrentBuild: "20348", UBR: 2227, Username: `WIN-SIMNODE01\` + tc.user, IsAdmin: tc.isAdmin, PSVersion: PSVersion,
			}
			if facts != want {
				t.Errorf("facts = %+v\nwant    %+v", facts, want)
			}
		})
	}
}

func TestUBRComesFromRegistry(t *testing.T) {
	ts := StartTest(t)
	if err := ts.Node().SetRegistryDWord(`HKLM\SOFTWARE\Microsoft\Windows NT\CurrentVersion`, "UBR", 2340); err != nil {
		t.Fatal(err)
	}
	r := &pwsh.Runner{Exec: ts.Execer()}
	facts, err := pwsh.Call(context.Background(), r, ops.NodeFacts, ops.NodeFactsRequest{})
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

// An op whose stdin is never closed never finishes, as on Windows: the
// bootstrap reads stdin to EOF.
func TestOpWaitsForStdinEOF(t *testing.T) {
	ts := StartTest(t)
	ex := ts.Execer()
	script, err := pwsh.BuildScript("node-facts", "# body\n", ops.NodeFactsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pr, pw := ioPipe()
	defer pw.Close()
	go pw.Write(script) // never closed
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var stdout, stderr bytes.Buffer
	_, err = ex.Exec(ctx, pwsh.CommandLine(), pr, &stdout, &stderr)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context deadline (the op must not finish before stdin EOF)", err)
	}
	if stdout.Len() != 0 {
		t.Errorf("op answered before stdin was closed: %q", stdout.String())
	}

	// The same script with stdin closed answers.
	stdout.Reset()
	status, err := ex.Exec(context.Background(), pwsh.CommandLine(), bytes.NewReader(script), &stdout, &stderr)
	if err != nil || status != 0 {
		t.Fatalf("status %d, err %v, stderr %q", status, err, stderr.String())
	}
	if _, err := pwsh.ParseEnvelope(stdout.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func TestFailedOpHasEnvelopeAndCLIXML(t *testing.T) {
	ts := StartTest(t, WithFaults(Faults{FailOps: []string{"node-facts"}}))
	ex := ts.Execer()
	script, _ := pwsh.BuildScript("node-facts", "", ops.NodeFactsRequest{})
	var stdout, stderr bytes.Buffer
	status, err := ex.Exec(context.Background(), pwsh.CommandLine(), bytes.NewReader(script), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if status != 1 {
		t.Errorf("exit status %d, want 1", status)
	}
	env, err := pwsh.ParseEnvelope(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if env.OK || env.Error.Kind != "injected" {
		t.Errorf("envelope = %+v, want an injected failure", env)
	}
	if !strings.HasPrefix(stderr.String(), "#< CLIXML\r\n<Objs ") || !strings.Contains(stderr.String(), `<S S="Error">`) {
		t.Errorf("stderr is not a CLIXML error record: %q", stderr.String())
	}
	if !strings.Contains(stderr.String(), "injected by simnode") {
		t.Errorf("stderr does not carry the message: %q", stderr.String())
	}
	// The fault fires once.
	if _, err := pwsh.Call(context.Background(), &pwsh.Runner{Exec: ex}, ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
		t.Errorf("second call: %v", err)
	}
}

func TestUnknownOpIsAnException(t *testing.T) {
	ts := StartTest(t)
	script, _ := pwsh.BuildScript("no-such-op", "", struct{}{})
	var stdout, stderr bytes.Buffer
	status, err := ts.Execer().Exec(context.Background(), pwsh.CommandLine(), bytes.NewReader(script), &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	env, err := pwsh.ParseEnvelope(stdout.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if status != 1 || env.OK || env.Error.Kind != "exception" {
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
	_, err := pwsh.Call(ctx, &pwsh.Runner{Exec: ts.Execer()}, ops.NodeFacts, ops.NodeFactsRequest{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if err := ts.UpdateFaults(func(f *Faults) { f.OpLatencyMS = nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := pwsh.Call(context.Background(), &pwsh.Runner{Exec: ts.Execer()}, ops.NodeFacts, ops.NodeFactsRequest{}); err != nil {
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
