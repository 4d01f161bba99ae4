package node_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// TestConnectThroughProxyJump: a node file naming a Host alias of
// ~/.ssh/config whose ProxyJump is the only way to the node, end to end
// through Connect and the agent.
func TestConnectThroughProxyJump(t *testing.T) {
	ts := simnode.StartTest(t)
	const name = "winnode.internal:22" // only the jump host resolves it
	jump := sshdtest.StartJump(t, "jumper", ts.Signer.PublicKey(), map[string]string{name: ts.Addr()})
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	writeFile(t, filepath.Join(home, ".ssh", "config"), "Host winnode\n  HostName winnode.internal\n  ProxyJump jumper@"+jump.Addr+"\n"+
		"Host 127.0.0.1\n  IdentityFile "+ts.KeyFile+"\n")
	kh := filepath.Join(t.TempDir(), "known_hosts")
	writeFile(t, kh, knownhosts.Line([]string{knownhosts.Normalize(jump.Addr)}, jump.HostKey)+"\n"+
		knownhosts.Line([]string{knownhosts.Normalize(name)}, ts.HostKey())+"\n")

	spec := v1alpha1.Node{Spec: v1alpha1.NodeSpec{Credentials: v1alpha1.CredentialsSpec{
		Hostname: "winnode", Username: ts.User(), PrivateKey: ts.KeyFile, KnownHostsFile: kh, HostKeyPolicy: v1alpha1.HostKeyPolicyStrict,
	}}}
	spec.Name = "winworker"
	var warnings []string
	n, err := node.Connect(t.Context(), spec, node.ConnectOptions{Warn: func(m string) { warnings = append(warnings, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if facts, err := n.Facts(t.Context()); err != nil || !strings.HasPrefix(facts.CurrentBuild, "20348") {
		t.Fatalf("Facts = %+v, %v", facts, err)
	}
	if got := jump.Forwards(); !slices.Equal(got, []string{name}) {
		t.Errorf("jump host forwarded to %q, want [%s]", got, name)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %q", warnings)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestDialHost: a hypervisor host given as user@host:port is reached
// with the key ~/.ssh/config names and the node's host key policy, and
// its SSH connection can do everything, unix sockets included.
func TestDialHost(t *testing.T) {
	ts := simnode.StartTest(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	writeFile(t, filepath.Join(home, ".ssh", "config"), "Host 127.0.0.1\n  IdentityFile "+ts.KeyFile+"\n")
	creds := v1alpha1.CredentialsSpec{KnownHostsFile: filepath.Join(t.TempDir(), "known_hosts"), HostKeyPolicy: v1alpha1.HostKeyPolicyAcceptNew}
	n, err := node.DialHost(t.Context(), ts.User()+"@"+ts.Addr(), creds, 0, node.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if facts, err := n.Facts(t.Context()); err != nil || !strings.HasPrefix(facts.CurrentBuild, "20348") {
		t.Fatalf("Facts = %+v, %v", facts, err)
	}
	want := node.Capabilities{Encoding: true, Attachments: true, OpsAhead: true, UploadsAhead: true, LinkRTT: true, QuickStat: true,
		PortForward: true, Terminal: true, Redial: true, UnixSockets: true, SSH: true}
	if got := n.Capabilities(); got != want || n.Name != ts.User()+"@"+ts.Addr() {
		t.Errorf("Capabilities = %+v, name %q; want %+v", got, n.Name, want)
	}
}
