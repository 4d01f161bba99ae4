//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// innerLoop is the README section whose sh blocks TestREADMEInnerLoop runs.
const innerLoop = "## Inner loop on a real VM"

// TestREADMEInnerLoop runs the sh blocks of the README's inner loop as
// written, in order and in one bash, against a simnode: VM_HOST and
// VM_PASSWORD point at it; HOME is a temporary directory with an SSH key
// pair (not yet authorized on the node: setup installs it) and a stand-in
// Kubernetes checkout whose `make WHAT=cmd/kubelet` cross-builds a stand-in
// kubelet.exe; the blocks run in a copy of this repository, the swdt clone
// they expect. The last block, swdt kubernetes --watch, runs until the test
// has rebuilt the kubelet with the README's build block and seen the new
// build swapped in, then gets Ctrl-C.
func TestREADMEInnerLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("builds swdt with make and runs the README's inner loop; skipped with -short")
	}
	for _, tool := range []string{"bash", "make", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is needed: %v", tool, err)
			}
			t.Skipf("%s is needed: %v", tool, err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	blocks := shellBlocks(t, filepath.Join(root, "README.md"), innerLoop)
	if !strings.Contains(blocks[len(blocks)-1], "--watch") {
		t.Fatalf("the last sh block of %q does not watch:\n%s", innerLoop, blocks[len(blocks)-1])
	}
	rebuild := ""
	for _, b := range blocks {
		if strings.Contains(b, "make WHAT=cmd/kubelet") {
			rebuild = b
		}
	}
	if rebuild == "" {
		t.Fatalf("no sh block of %q builds the kubelet", innerLoop)
	}

	const password = "inner-loop-Passw0rd"
	clone := filepath.Join(t.TempDir(), "swdt")
	// The README's make builds the agent in the clone: simnode runs that
	// build as swdt-agent too.
	builtAgents := simnode.WithOptions(func(o *simnode.Options) {
		o.AgentDigests = func() []string {
			var out []string
			for _, goarch := range []string{"amd64", "arm64"} {
				if raw, err := os.ReadFile(filepath.Join(clone, "pkg", "agentbin", "dist", agentbin.FileName(goarch)+".sha256")); err == nil {
					out = append(out, string(raw))
				}
			}
			return out
		}
	})
	ts := simnode.StartTest(t, simnode.WithPassword(password), builtAgents)
	home := t.TempDir()
	pub := writeKeyPair(t, filepath.Join(home, ".ssh"))
	k8s := filepath.Join(home, "go", "src", "k8s.io", "kubernetes")
	writeStandInKubernetes(t, k8s, "v1")
	kubelet := filepath.Join(k8s, "_output", "local", "bin", "windows", "amd64", "kubelet.exe")
	copyClone(t, root, clone)
	env := shellEnv(t, home, map[string]string{"VM_HOST": ts.Addr(), "VM_PASSWORD": password})

	sh := exec.Command("bash", "-c", "set -e\n"+strings.Join(blocks, "\n"))
	sh.Dir, sh.Env = clone, env
	// Its own process group, so that the test's Ctrl-C reaches swdt as a
	// terminal's does.
	sh.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out, errOut syncbuf.Buffer
	sh.Stdout, sh.Stderr = &out, &errOut
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- sh.Wait() }()
	ended := false // whether the test has received from done
	defer func() {
		if !ended {
			_ = syscall.Kill(-sh.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
		}
	}()
	wait := func(what string, ok func() bool) {
		t.Helper()
		// A guard against a hang, not a timing requirement: make build may
		// compile swdt's dependencies first.
		deadline := time.After(10 * time.Minute)
		for !ok() {
			select {
			case err := <-done:
				ended = true
				t.Fatalf("the README's blocks ended (%v) before %s", err, what)
			case <-deadline:
				t.Fatalf("no %s after 10 minutes", what)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	wait("watch", func() bool { return strings.Contains(errOut.String(), "watching 1 source") })
	if got, want := hashOn(t, ts, `C:\k\kubelet.exe`), fileHash(t, kubelet); got != want {
		t.Fatalf("the first build is not on the node: sha256 %s, want %s", got, want)
	}
	if keys, err := ts.Node().ReadFile(simnode.PathAdminAuthorizedKeys); err != nil || !bytes.Contains(keys, bytes.TrimSpace(pub)) {
		t.Errorf("swdt setup did not install ~/.ssh/id_ed25519.pub (%v):\n%s", err, keys)
	}

	// The next build, with the README's build block again.
	writeStandInKubernetes(t, k8s, "v2")
	build := exec.Command("bash", "-c", "set -e\n"+rebuild)
	build.Env = env
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, b)
	}
	v2 := fileHash(t, kubelet)
	// The run that swapped it in has printed its summary.
	wait("second swap", func() bool {
		sum, _, err := ts.Node().Hash(`C:\k\kubelet.exe`)
		return err == nil && sum == v2 && strings.Count(out.String(), "updated") >= 2
	})

	// Ctrl-C, as a terminal sends it to the foreground process group.
	if err := syscall.Kill(-sh.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		ended = true
		// Ctrl-C is how a watch ends: after a good swap, it is a success.
		if err != nil {
			t.Errorf("after Ctrl-C: %v, want exit code 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("swdt kubernetes --watch did not stop after Ctrl-C")
	}
	if svc := ts.State().Services["kubelet"]; svc == nil || svc.Status != simnode.StatusRunning {
		t.Errorf("kubelet is not Running after the loop: %+v", svc)
	}
}

// shellBlocks are the ```sh blocks of the README section that starts with
// the line heading, each without the indentation of its fence.
func shellBlocks(t *testing.T, readme, heading string) []string {
	t.Helper()
	data, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks  []string
		in      bool
		block   []string
		indent  string
		section bool
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == heading:
			section = true
		case !section:
		case !in && strings.HasPrefix(line, "## "):
			section = false
		case !in && strings.TrimSpace(line) == "```sh":
			in, block = true, nil
			indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(block, "\n")+"\n")
		case in:
			block = append(block, strings.TrimPrefix(line, indent))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(blocks) == 0 {
		t.Fatalf("%s: no sh blocks under %q", readme, heading)
	}
	return blocks
}

// writeKeyPair writes id_ed25519 and id_ed25519.pub into dir and returns
// the public key.
func writeKeyPair(t *testing.T, dir string) []byte {
	t.Helper()
	pubKey, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(key, "")
	if err != nil {
		t.Fatal(err)
	}
	sshPub, err := ssh.NewPublicKey(pubKey)
	if err != nil {
		t.Fatal(err)
	}
	pub := ssh.MarshalAuthorizedKey(sshPub)
	writeFiles(t, dir, map[string]string{"id_ed25519": string(pem.EncodeToMemory(block)), "id_ed25519.pub": string(pub)})
	return pub
}

// writeStandInKubernetes writes a stand-in Kubernetes checkout into dir: a
// Makefile whose `make WHAT=cmd/kubelet` with
// KUBE_BUILD_PLATFORMS=windows/amd64 cross-builds cmd/kubelet, a real PE
// file, where Kubernetes' build puts it. version tells builds apart.
func writeStandInKubernetes(t *testing.T, dir, version string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{
		"go.mod": "module k8s.io/kubernetes\n\ngo 1.22\n",
		"Makefile": "all:\n" +
			"\ttest \"$(WHAT)\" = cmd/kubelet && test \"$(KUBE_BUILD_PLATFORMS)\" = windows/amd64\n" +
			"\tGOOS=windows GOARCH=amd64 CGO_ENABLED=0 go build -o _output/local/bin/windows/amd64/kubelet.exe ./cmd/kubelet\n",
		"cmd/kubelet/main.go": "// Command kubelet stands in for Kubernetes' kubelet.\npackage main\n\n" +
			"func main() { println(\"kubelet " + version + "\") }\n",
	})
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// copyClone copies the source of the swdt checkout at root to dir, without
// what git ignores there (build output, a node.yaml) or its history.
func copyClone(t *testing.T, root, dir string) {
	t.Helper()
	ignored := func(rel string, d fs.DirEntry) bool {
		switch {
		case filepath.Dir(rel) == ".":
			return slices.Contains([]string{".git", "bin", "dist", ".cache", "node.yaml"}, rel)
		case filepath.Dir(rel) == filepath.Join("pkg", "agentbin", "dist"):
			return strings.HasSuffix(rel, ".exe") || strings.HasSuffix(rel, ".sha256")
		}
		return d.IsDir() && d.Name() == "node_modules"
	}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if ignored(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dir, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.WriteFile(target, data, info.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("copy %s: %v", root, err)
	}
}

// shellEnv is the environment of the README's shell: this one with HOME
// replaced and vars set, minus what would make swdt or make reach outside
// the test (the ssh-agent, swdt's variables, a calling make's flags). Go
// keeps its caches and settings, which are found through HOME by default.
func shellEnv(t *testing.T, home string, vars map[string]string) []string {
	t.Helper()
	goEnv, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	set := map[string]string{}
	if err := json.Unmarshal(goEnv, &set); err != nil {
		t.Fatalf("go env: %v", err)
	}
	set["HOME"] = home
	set["NO_COLOR"] = "1"
	for k, v := range vars {
		set[k] = v
	}
	drop := func(k string) bool {
		switch k {
		case "SSH_AUTH_SOCK", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "MAKEFLAGS", "MFLAGS", "MAKELEVEL",
			"BIN", "GO", "VERSION", "COMMIT", "GOTESTFLAGS":
			return true
		}
		_, ok := set[k]
		return ok || strings.HasPrefix(k, "SWDT_")
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !drop(k) {
			env = append(env, kv)
		}
	}
	for k, v := range set {
		env = append(env, k+"="+v)
	}
	return env
}

// fileHash is the SHA-256 of a local file, in hex.
func fileHash(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
