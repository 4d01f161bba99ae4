package clustertest

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/internal/syncbuf"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// Machine is a simnode (cmd/simnode, built from this tree) running as a
// process on the node of a Network: its SSH server listens on the node's
// address, and its simulated kubelet dials the API server from there.
type Machine struct {
	// Addr is the SSH address, NODE:22.
	Addr string
	// StateDir is simnode's state directory (state.json, fs/).
	StateDir string
	// KeyFile is the administrator's private key; KnownHostsFile lists
	// the machine's host key for Addr.
	KeyFile, KnownHostsFile string
	// User is the administrator account.
	User string
}

var simnodeBuild struct {
	once sync.Once
	path string
	err  error
}

// simnodeBinary builds cmd/simnode once per test binary, into the user
// cache (replaced atomically: other test binaries may build it at once).
func simnodeBinary() (string, error) {
	b := &simnodeBuild
	b.once.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			b.err = err
			return
		}
		dir := filepath.Join(cache, "swdt", "clustertest")
		if b.err = os.MkdirAll(dir, 0o755); b.err != nil {
			return
		}
		tmp, err := os.CreateTemp(dir, "simnode-*")
		if err != nil {
			b.err = err
			return
		}
		tmp.Close()
		gocmd, err := exec.LookPath("go")
		if err != nil {
			// The toolchain that built this test binary.
			gocmd = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		out, err := exec.Command(gocmd, "build", "-o", tmp.Name(), "sigs.k8s.io/swdt/cmd/simnode").CombinedOutput()
		if err != nil {
			os.Remove(tmp.Name())
			b.err = fmt.Errorf("go build ./cmd/simnode: %v\n%s", err, out)
			return
		}
		b.path = filepath.Join(dir, "simnode")
		if b.err = os.Rename(tmp.Name(), b.path); b.err != nil {
			os.Remove(tmp.Name())
		}
	})
	return b.path, b.err
}

// StartMachine runs a bare simnode (only OpenSSH: what swdt join starts
// from) named hostname on the network's node for the duration of the
// test, with args added to its command line (simnode --help).
func (n *Network) StartMachine(t testing.TB, hostname string, args ...string) *Machine {
	t.Helper()
	bin, err := simnodeBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	m := &Machine{Addr: n.NodeAddr.String() + ":22", StateDir: filepath.Join(dir, "state"), KeyFile: filepath.Join(dir, "id_ed25519"),
		User: "Administrator"}
	m.KnownHostsFile = filepath.Join(m.StateDir, "known_hosts")
	pub, err := writeSSHKey(m.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := n.Command(n.Node, bin, append([]string{"--state-dir", m.StateDir, "--listen", m.Addr, "--authorized-key", pub,
		"--hostname", hostname, "--bare",
		"--start-delay=20ms", "--stop-delay=20ms", "--crash-after=100ms", "--shutdown-grace=500ms", "--boot-time=100ms"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start simnode on the node: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("simnode (node) log (tail):\n%s", tail(stderr.String(), 40))
		}
	})
	// simnode prints its address once it listens and has written
	// known_hosts.
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(strings.TrimSpace(sc.Text()), "address:") {
			go func() {
				for sc.Scan() {
				}
			}()
			return m
		}
	}
	t.Fatalf("simnode on the node did not start:\n%s", stderr.String())
	return nil
}

// writeSSHKey writes a new ed25519 key (OpenSSH format) to path and its
// public key to path.pub, which it returns.
func writeSSHKey(path string) (string, error) {
	pubKey, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return "", err
	}
	sp, err := ssh.NewPublicKey(pubKey)
	if err != nil {
		return "", err
	}
	return path + ".pub", os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644)
}

// ReadFile reads the machine's file at a Windows path (C:\k\kubelet.exe).
func (m *Machine) ReadFile(p string) ([]byte, error) {
	w, err := ntfs.ParsePath(p)
	if err != nil {
		return nil, err
	}
	host, _, err := ntfs.Resolve(filepath.Join(m.StateDir, "fs"), w)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(host)
}

// Exists reports whether the machine has a file at p.
func (m *Machine) Exists(p string) bool {
	_, err := m.ReadFile(p)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// Services lists the machine's services by lower-case name, with their
// status (Running, Stopped, ...).
func (m *Machine) Services() (map[string]string, error) {
	st, err := m.state()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, s := range st.Services {
		out[name] = s.Status
	}
	return out, nil
}

// Features lists the machine's Windows features by lower-case name, with
// their install state (Available, Installed, ...).
func (m *Machine) Features() (map[string]string, error) {
	st, err := m.state()
	if err != nil {
		return nil, err
	}
	return st.Features, nil
}

// machineState is the part of simnode's state.json the tests read.
type machineState struct {
	Services map[string]struct {
		Status string `json:"status"`
	} `json:"services"`
	Features map[string]string `json:"features"`
}

func (m *Machine) state() (*machineState, error) {
	raw, err := os.ReadFile(filepath.Join(m.StateDir, "state.json"))
	if err != nil {
		return nil, err
	}
	var st machineState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("simnode's state.json: %w", err)
	}
	return &st, nil
}
