//go:build windows

package remote

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/agent"
	"golang.org/x/sys/windows"
)

// serveAgentPipe serves an ssh-agent holding one key on the named pipe
// name, for clients connections, as OpenSSH for Windows' ssh-agent
// service does on AgentPipe. It fails the test when the pipe exists.
func serveAgentPipe(t *testing.T, name string, clients int) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyring := agent.NewKeyring()
	if err := keyring.Add(agent.AddedKey{PrivateKey: priv, Comment: "pipe key"}); err != nil {
		t.Fatal(err)
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		t.Fatal(err)
	}
	for range clients {
		// Each instance is created before any client dials, so that a
		// dial never races the server.
		h, err := windows.CreateNamedPipe(p, windows.PIPE_ACCESS_DUPLEX,
			windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT, windows.PIPE_UNLIMITED_INSTANCES, 4096, 4096, 0, nil)
		if err != nil {
			t.Fatalf("create pipe %s: %v", name, err)
		}
		f := os.NewFile(uintptr(h), name)
		t.Cleanup(func() { f.Close() })
		go func() {
			if err := windows.ConnectNamedPipe(h, nil); err != nil && !errors.Is(err, windows.ERROR_PIPE_CONNECTED) {
				return
			}
			_ = agent.ServeAgent(keyring, f)
		}()
	}
}

// A Windows user's keys are in OpenSSH for Windows' ssh-agent, on its
// named pipe, with SSH_AUTH_SOCK unset; SSH_AUTH_SOCK may also name a
// pipe, with backslashes or slashes.
func TestDialAgentPipe(t *testing.T) {
	if _, err := os.Stat(AgentPipe); err == nil {
		t.Skipf("%s exists here: a real ssh-agent runs", AgentPipe)
	}
	if c, where, err := dialAgent(""); c != nil || err != nil || where != AgentPipe {
		t.Fatalf("no agent service: dialAgent = %v, %s, %v; want nothing and no error", c, where, err)
	}
	own := `\\.\pipe\swdt-test-agent-` + strconv.Itoa(os.Getpid())
	serveAgentPipe(t, AgentPipe, 2)
	serveAgentPipe(t, own, 2)
	for _, sock := range []string{"", own, strings.ReplaceAll(own, `\`, "/")} {
		c, where, err := dialAgent(sock)
		if err != nil {
			t.Fatalf("dialAgent(%q): %v", sock, err)
		}
		keys, err := agent.NewClient(c).List()
		c.Close()
		if err != nil || len(keys) != 1 || keys[0].Comment != "pipe key" {
			t.Errorf("dialAgent(%q) reached %s holding %v, %v; want the pipe's one key", sock, where, keys, err)
		}
	}
	if _, _, err := dialAgent(`\\.\pipe\swdt-no-such-agent`); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a named pipe that is not there: %v", err)
	}
	// What swdt offers the node: the service's key, SSH_AUTH_SOCK unset.
	t.Setenv("SSH_AUTH_SOCK", "")
	ks := openKeySource(nil, slog.New(slog.DiscardHandler))
	defer ks.close()
	if len(ks.agentSigners) != 1 || !strings.Contains(ks.agentDesc, "1 key") {
		t.Errorf("with SSH_AUTH_SOCK unset, swdt offers %d agent keys (%s), want the pipe's one", len(ks.agentSigners), ks.agentDesc)
	}
}
