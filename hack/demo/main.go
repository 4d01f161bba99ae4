// Command demo is `make demo`: the whole of swdt against a simulated Windows
// node, in well under a minute, with nothing but Go installed.
//
// It creates a temporary directory with a throwaway SSH key, cross-builds
// stand-in service binaries (real PE files, see ./fakesvc), starts simnode on
// a free loopback port, writes a node.yaml and runs, in order: swdt config
// validate, swdt setup, swdt kubernetes, swdt kubernetes again (nothing
// changes), and swdt wins. Each step gets a header saying what happens, on
// which node, and how long it took. simnode is stopped and the directory
// removed when the demo ends, fails or is interrupted. The exit code is 0
// when every step passed, 1 when one failed and 130 on Ctrl-C.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

func main() {
	var opts options
	flag.StringVar(&opts.Swdt, "swdt", "bin/swdt", "the swdt binary to demonstrate")
	flag.StringVar(&opts.Simnode, "simnode", "bin/simnode", "the simnode binary to run the node")
	flag.StringVar(&opts.Go, "go", "go", "the go command that cross-builds the Windows binaries")
	flag.BoolVar(&opts.Keep, "keep", false, "keep the demo directory (node.yaml, key, simnode state) and print its path")
	flag.Parse()
	opts.Out = os.Stdout

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, opts)
	interrupted := ctx.Err() != nil
	stop()
	switch {
	case interrupted:
		fmt.Fprintln(os.Stderr, "demo: interrupted; simnode stopped and the demo directory removed")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "demo: FAILED:", err)
		os.Exit(1)
	}
}

// options configure one demo run.
type options struct {
	Swdt, Simnode string    // binaries under demonstration
	Go            string    // go command for the cross-builds
	Keep          bool      // keep the demo directory
	Out           io.Writer // where the story is told (and swdt's output goes)
}

// service is a stand-in Windows binary the demo builds and deploys.
type service struct {
	name, version, dest, healthCheck string
}

// services are simnode's seeded services plus wins, in the order the node
// file lists them.
var services = []service{
	{"containerd", "v1.7.11-demo", `C:\Program Files\containerd\containerd.exe`, "namedPipe: containerd-containerd"},
	{"kubelet", "v1.33.0-demo", `C:\k\kubelet.exe`, "tcpPort: 10250"},
	{"kube-proxy", "v1.33.0-demo", `C:\k\kube-proxy.exe`, "tcpPort: 10256"},
	{"wins", "v0.15.1-demo", `C:\etc\rancher\wins\wins.exe`, ""},
}

// step is one swdt command of the story.
type step struct {
	title string   // what happens, in a few words
	why   string   // the line under the header
	args  []string // swdt arguments after the subcommand's -c node.yaml
	// check, when set, inspects swdt's stdout after a successful exit.
	check func(stdout string) error
	// config is the node file (default node.yaml).
	config string
}

// run tells the whole story; the deferred clean-ups stop simnode and
// remove the demo directory whatever happens.
func run(ctx context.Context, o options) error {
	start := time.Now()
	swdt, err := filepath.Abs(o.Swdt)
	if err != nil {
		return err
	}
	simBin, err := filepath.Abs(o.Simnode)
	if err != nil {
		return err
	}
	for _, b := range []string{swdt, simBin} {
		if _, err := os.Stat(b); err != nil {
			return fmt.Errorf("%w (run `make build` first)", err)
		}
	}
	dir, err := os.MkdirTemp("", "swdt-demo-")
	if err != nil {
		return err
	}
	if o.Keep {
		defer fmt.Fprintf(o.Out, "\nThe demo directory is kept: %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	fmt.Fprintf(o.Out, "swdt demo: the whole tool against simnode, a SIMULATED Windows Server 2022 node.\n"+
		"Nothing leaves this machine: simnode listens on loopback and keeps its state in %s.\n", dir)

	t := time.Now()
	header(o.Out, "prepare", "a throwaway SSH key and Windows binaries built here with GOOS=windows")
	if err := writeKey(dir); err != nil {
		return err
	}
	fmt.Fprintln(o.Out, "  key:      id_ed25519 (ed25519, generated in Go; no ssh-keygen needed)")
	if err := buildBinaries(ctx, o.Go, filepath.Join(dir, "bin")); err != nil {
		return err
	}
	for _, s := range services {
		fmt.Fprintf(o.Out, "  built:    bin/%s.exe (%s %s, a real PE executable)\n", s.name, s.name, s.version)
	}
	sim, err := startSimnode(ctx, simBin, dir)
	if err != nil {
		return err
	}
	defer sim.stop(o.Out)
	fmt.Fprintf(o.Out, "  simnode:  listening on %s (containerd, kubelet, kube-proxy running with placeholder binaries; no Chocolatey, no wins)\n", sim.addr)
	if err := os.WriteFile(filepath.Join(dir, "node.yaml"), []byte(nodeYAML(sim.addr)), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "  node.yaml:\n%s", indent(nodeYAML(sim.addr), "    | "))
	done(o.Out, t)

	node := fmt.Sprintf("node simnode (%s)", sim.addr)
	steps := []step{
		{title: "swdt config validate", why: "check node.yaml offline: strict fields, paths, every problem at once"},
		{title: "swdt setup", why: "bootstrap " + node + ": Remote Desktop, Chocolatey + vim and grep, the SSH key.\n" +
			"  simnode simulates Chocolatey's download; a real node needs internet access for it"},
		{title: "swdt kubernetes", why: "hot-swap containerd, kubelet and kube-proxy on " + node + ":\n" +
			"  stage while the services run, swap in dependency order, health-check"},
		{title: "swdt kubernetes", why: "the same again: every binary on " + node + " is already current, so nothing is stopped",
			check: allUnchanged},
		{title: "swdt wins", why: "deploy rancher/wins on " + node + " and prove its named-pipe bridge reaches the host",
			args: []string{"--deep"}},
		{title: "swdt status", why: "read-only: what every service on " + node + " runs, next to what you built"},
		{title: "swdt exec", why: "run a program on " + node + ": its arguments travel as data, its output streams back",
			args: []string{"simnode", "--", "cmd.exe", "/c", "echo", "kubelet's node says: hello & goodbye"}},
		{title: "swdt logs", why: "a service's state and its service control manager events, without RDP",
			args: []string{"simnode", "kubelet"}},
	}
	for i, s := range steps {
		if err := runStep(ctx, o.Out, dir, swdt, i+1, len(steps), s); err != nil {
			if ctx.Err() == nil {
				sim.dumpLog(o.Out)
			}
			return err
		}
	}
	vmSteps, err := libvirtDemo(ctx, o.Out, dir, swdt)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Out, "\n✔ demo passed: %d steps in %s. Try it on a real VM next: see README.md, \"Inner loop on a real VM\".\n",
		len(steps)+vmSteps, since(start))
	return nil
}

// runStep runs one swdt command in dir and tells the reader how it went.
func runStep(ctx context.Context, out io.Writer, dir, swdt string, n, total int, s step) error {
	sub := strings.Fields(strings.TrimPrefix(s.title, "swdt "))
	config := s.config
	if config == "" {
		config = "node.yaml"
	}
	args := append(append(sub, "-c", config), s.args...)
	header(out, fmt.Sprintf("%d/%d %s", n, total, s.title), s.why)
	fmt.Fprintf(out, "$ swdt %s\n", strings.Join(args, " "))
	t := time.Now()
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, swdt, args...)
	cmd.Dir = dir
	// Only a checked step tees stdout: the others hand swdt the terminal,
	// so it shows colour and progress bars.
	cmd.Stdout, cmd.Stderr = out, out
	if s.check != nil {
		// Two writers make exec copy stdout and stderr in two
		// goroutines: out must take their writes one at a time.
		locked := &lockedWriter{w: out}
		cmd.Stdout, cmd.Stderr = io.MultiWriter(locked, &stdout), locked
	}
	// swdt runs in its own process group: a Ctrl-C reaches it once, from
	// here, so it finishes a swap in progress instead of giving up at once.
	detach(cmd)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("step %d (%s) failed after %s: %w", n, s.title, since(t), err)
	}
	if s.check != nil {
		if err := s.check(stdout.String()); err != nil {
			return fmt.Errorf("step %d (%s): %w", n, s.title, err)
		}
	}
	done(out, t)
	return nil
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// allUnchanged checks that a second swdt kubernetes changed nothing.
func allUnchanged(stdout string) error {
	var rows int
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] == "PROVISIONER" {
			continue
		}
		if f[1] != "unchanged" {
			return fmt.Errorf("%s was %s, want unchanged", f[0], f[1])
		}
		rows++
	}
	if rows != 3 {
		return fmt.Errorf("%d provisioners in the summary, want 3:\n%s", rows, stdout)
	}
	return nil
}

// header starts a step of the story.
func header(out io.Writer, title, why string) {
	fmt.Fprintf(out, "\n━━━ %s ━━━\n  %s\n", title, why)
}

// done ends a step of the story with its duration.
func done(out io.Writer, t time.Time) {
	fmt.Fprintf(out, "✔ done in %s\n", since(t))
}

// since is the time since t, rounded for reading.
func since(t time.Time) time.Duration {
	return time.Since(t).Round(10 * time.Millisecond)
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(prefix + l)
	}
	return b.String() + "\n"
}

// writeKey writes id_ed25519 and id_ed25519.pub into dir.
func writeKey(dir string) error {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(priv, "swdt-demo")
	if err != nil {
		return err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return err
	}
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sshPub))) + " swdt-demo\n"
	if err := os.WriteFile(filepath.Join(dir, "id_ed25519"), pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "id_ed25519.pub"), []byte(authorized), 0o644)
}

// buildBinaries cross-builds one fakesvc per service into dir, each with
// its own name and version, so each has its own SHA-256.
func buildBinaries(ctx context.Context, goCmd, dir string) error {
	for _, s := range services {
		ldflags := fmt.Sprintf("-s -w -X main.name=%s -X main.version=%s", s.name, s.version)
		cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", ldflags,
			"-o", filepath.Join(dir, s.name+".exe"), "sigs.k8s.io/swdt/hack/demo/fakesvc")
		cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("build %s.exe (run the demo from the swdt repository): %w\n%s", s.name, err, out)
		}
	}
	return nil
}

// simnodeProc is a running simnode.
type simnodeProc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *bytes.Buffer
	exited chan struct{}
}

// startSimnode starts simnode on a free loopback port with its state in
// dir/state and the demo key authorized, and waits for its address.
func startSimnode(ctx context.Context, bin, dir string) (*simnodeProc, error) {
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state"),
		"--authorized-key", filepath.Join(dir, "id_ed25519.pub"))
	detach(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &simnodeProc{cmd: cmd, stderr: new(bytes.Buffer), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start simnode: %w", err)
	}
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "address:"); ok {
				addrc <- strings.TrimSpace(a)
			}
		}
		close(addrc)
		cmd.Wait()
		close(p.exited)
	}()
	select {
	case addr, ok := <-addrc:
		if ok {
			p.addr = addr
			return p, nil
		}
		<-p.exited
		return nil, fmt.Errorf("simnode exited before listening: %s", strings.TrimSpace(p.stderr.String()))
	case <-time.After(15 * time.Second):
		err = errors.New("simnode did not print its address within 15s")
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.stop(io.Discard)
	return nil, err
}

// stop interrupts simnode and kills it if it has not exited within 5s.
func (p *simnodeProc) stop(out io.Writer) {
	interrupt(p.cmd, p.exited)
	fmt.Fprintln(out, "simnode stopped.")
}

// dumpLog shows what simnode logged, to help explain a failed step.
func (p *simnodeProc) dumpLog(out io.Writer) {
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		fmt.Fprintf(out, "simnode's log:\n%s\n", indent(s, "  "))
	}
}

// nodeYAML is the node file the demo writes for the simnode at addr. Paths
// are relative to the demo directory, where the file lives.
func nodeYAML(addr string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: simnode
spec:
  credentials:
    hostname: %s
    username: Administrator
    privateKey: ./id_ed25519
    knownHostsFile: ./known_hosts   # starts empty: accept-new records the host key
    hostKeyPolicy: accept-new
  setup:
    enableRDP: true
    chocoPackages: [vim, grep]
    authorizedKeys: [./id_ed25519.pub]
  kubernetes:
    provisioners:
`, addr)
	for _, s := range services[:3] {
		fmt.Fprintf(&b, "    - name: %s\n      version: %s\n      sourceURL: ./bin/%s.exe\n      destination: '%s'\n      healthCheck:\n      - %s\n",
			s.name, s.version, s.name, s.dest, s.healthCheck)
	}
	w := services[3]
	fmt.Fprintf(&b, "  wins:\n    sourceURL: ./bin/%s.exe\n    destination: '%s'\n    whiteList:\n      proxyPorts: [9796]\n", w.name, w.dest)
	return b.String()
}

// interrupt sends cmd's process an interrupt and kills it if it has not
// exited (closed exited) within 5s.
func interrupt(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
}
