package app

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"

	"sigs.k8s.io/swdt/internal/echotest"
	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// ssh, cp and port-forward reach a node that only a ProxyJump of
// ~/.ssh/config leads to, with the node file's key and known_hosts: the
// connection every swdt command makes, no second set of settings.
func TestTransportVerbsThroughProxyJump(t *testing.T) {
	ts := simnode.StartTest(t)
	const name = "winnode.internal:22" // only the jump host resolves it
	jump := sshdtest.StartJump(t, "jumper", ts.Signer.PublicKey(), map[string]string{name: ts.Addr()})
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("SSH_AUTH_SOCK", "")
	writeTree(t, filepath.Join(home, ".ssh"), map[string][]byte{"config": []byte("Host winnode\n  HostName winnode.internal\n  ProxyJump jumper@" + jump.Addr + "\n" +
		"Host 127.0.0.1\n  IdentityFile " + ts.KeyFile + "\n")})
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(knownhosts.Line([]string{knownhosts.Normalize(jump.Addr)}, jump.HostKey)+"\n"+
		knownhosts.Line([]string{knownhosts.Normalize(name)}, ts.HostKey())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := ts.Credentials()
	c.Hostname, c.KnownHostsFile = "winnode", kh
	file := writeNodeFile(t, t.TempDir(), nodeHeader("winworker", c))

	if code, out, errOut := runIn(t, "", "ssh", "-c", file, "--", "hostname"); code != exitcode.OK || out != "WIN-SIMNODE01\r\n" {
		t.Errorf("ssh: exit %d, stdout %q\n%s", code, out, errOut)
	}
	dir := t.TempDir()
	if code, _, errOut := run(t, "cp", "-c", file, `:C:\var\lib\kubelet\config.yaml`, dir); code != exitcode.OK {
		t.Errorf("cp: exit %d\n%s", code, errOut)
	} else if got, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); !strings.HasPrefix(string(got), "kind: KubeletConfiguration") {
		t.Errorf("cp brought %q", got)
	}
	port := echotest.Server(t, "through the jump: ")
	doc, stop := forwardedPorts(t, "-c", file, ":"+strconv.Itoa(port))
	if got := echotest.Ask(t, doc.Forwards[0].Local, "hi"); got != "through the jump: hi\n" {
		t.Errorf("port-forward: %q", got)
	}
	if code, errOut := stop(); code != exitcode.OK {
		t.Errorf("port-forward: exit %d\n%s", code, errOut)
	}
	if got := jump.Forwards(); len(got) < 3 || slices.ContainsFunc(got, func(f string) bool { return f != name }) {
		t.Errorf("jump host forwarded to %q, want only %s, once per command", got, name)
	}
}
