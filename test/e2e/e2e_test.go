// Package e2e runs the flow of `make demo` against a real Windows node:
// swdt config validate, setup, kubernetes (twice) and wins. It is skipped
// unless SWDT_E2E_CONFIG names a node file; README.md, "Testing on a real
// Windows node", says what the node needs.
//
// The suite puts the node back as it found it where it can: every
// provisioner's destination is downloaded before the first swap and swapped
// back in at the end with a second `swdt kubernetes` from those backups; a
// wins that was not installed is uninstalled again, and one that was has its
// wins.exe put back. What setup turns on (RDP, Chocolatey, packages,
// authorized keys) stays: it is the node's bootstrap.
package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/remote"
)

// ConfigEnv names the node file the suite runs against.
const ConfigEnv = "SWDT_E2E_CONFIG"

// suite is one run against the nodes of the node file.
type suite struct {
	swdt   string // the swdt binary under test
	config string // absolute path of the node file
	nodes  []v1alpha1.Node
	dir    string // backups and the restore file
}

func TestRealNode(t *testing.T) {
	path := os.Getenv(ConfigEnv)
	if path == "" {
		t.Skip(ConfigEnv + " is not set: set it to the node file of a real Windows Server node to run " +
			"validate, setup, kubernetes and wins against it (README.md, \"Testing on a real Windows node\")")
	}
	runSuite(t, path)
}

// runSuite runs the flow against the nodes of the node file at path.
func runSuite(t *testing.T, path string) {
	res, err := config.Load(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	s := &suite{swdt: buildSwdt(t), config: res.Path, nodes: res.Nodes, dir: t.TempDir()}

	steps := []struct {
		name string
		run  func(*testing.T)
	}{
		{"validate", s.validate},
		{"agent", s.agent},
		{"setup", s.setup},
		{"kubernetes", s.kubernetes},
		{"wins", s.wins},
		{"daytwo", s.daytwo},
	}
	for _, st := range steps {
		if !t.Run(st.name, st.run) {
			return
		}
	}
}

// validate: the node file is valid.
func (s *suite) validate(t *testing.T) {
	s.swdtOK(t, "config", "validate", "-c", s.config)
}

// agent: swdt delivers swdt-agent to every node on first contact (or finds
// it there from an earlier run), a second run sends nothing and says so at
// -v, and exactly one version sits where the README says.
func (s *suite) agent(t *testing.T) {
	_, first, code := s.runAll(t, "setup", "-c", s.config, "--dry-run", "-v")
	if code != 0 {
		t.Fatalf("swdt setup --dry-run: exit %d", code)
	}
	_, second, code := s.runAll(t, "setup", "-c", s.config, "--dry-run", "-v")
	if code != 0 {
		t.Fatalf("swdt setup --dry-run: exit %d", code)
	}
	for _, n := range s.nodes {
		if !strings.Contains(first, "swdt-agent uploaded") && !strings.Contains(first, "swdt-agent is on the node and verified, nothing sent") {
			t.Errorf("node %s: the first run's -v output says nothing about the agent:\n%s", n.Name, first)
		}
	}
	if strings.Contains(second, "swdt-agent uploaded") || strings.Count(second, "swdt-agent is on the node and verified, nothing sent") != len(s.nodes) {
		t.Errorf("the second run sent the agent again, or did not say it reused it on every node:\n%s", second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, n := range s.nodes {
		cfg, err := node.RemoteConfig(n.Spec.Credentials)
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		c, err := remote.Dial(ctx, cfg)
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		entries, err := c.ReadDir(ctx, ops.AgentDir)
		c.Close()
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		var agents []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "swdt-agent-") && ops.IsAgentPath(ops.AgentDir+`\`+e.Name()) {
				agents = append(agents, e.Name())
			}
		}
		if len(agents) != 1 {
			t.Errorf("node %s: %s holds %v, want exactly one swdt-agent", n.Name, ops.AgentDir, agents)
		}
	}
}

// setup brings every node to its spec.setup, and a second run changes
// nothing.
func (s *suite) setup(t *testing.T) {
	var first, second struct {
		Nodes []struct {
			Name  string `json:"name"`
			Error string `json:"error"`
			Steps []struct {
				Name   string `json:"name"`
				Result string `json:"result"`
				Detail string `json:"detail"`
			} `json:"steps"`
		} `json:"nodes"`
	}
	s.swdtJSON(t, &first, "setup", "-c", s.config)
	s.swdtJSON(t, &second, "setup", "-c", s.config)
	for _, n := range second.Nodes {
		for _, st := range n.Steps {
			if st.Result != "unchanged" {
				t.Errorf("node %s: second setup: step %s is %s (%s), want unchanged", n.Name, st.Name, st.Result, st.Detail)
			}
		}
	}
}

// kubernetes swaps every provisioner's binary in, checks that a second run
// changes nothing, and swaps the node's own binaries back in at the end.
func (s *suite) kubernetes(t *testing.T) {
	var items []v1alpha1.ProvisionerSpec
	for _, n := range s.nodes {
		items = append(items, n.Spec.Kubernetes.Provisioners...)
	}
	if len(items) == 0 {
		t.Skip("no node of the file has spec.kubernetes.provisioners")
	}
	restore := s.backup(t, func(n v1alpha1.Node) []string {
		var paths []string
		for _, p := range n.Spec.Kubernetes.Provisioners {
			paths = append(paths, p.Destination)
		}
		return paths
	})
	t.Cleanup(func() { s.restoreKubernetes(t, restore) })

	first := s.kubeRun(t, "kubernetes", "-c", s.config)
	second := s.kubeRun(t, "kubernetes", "-c", s.config)
	for node, provs := range first {
		for name, action := range provs {
			if action != "updated" && action != "unchanged" {
				t.Errorf("node %s: provisioner %s: %s", node, name, action)
			}
		}
	}
	for _, n := range s.nodes {
		for _, p := range n.Spec.Kubernetes.Provisioners {
			if got := second[n.Name][p.Name]; !p.Overwrite && got != "unchanged" {
				t.Errorf("node %s: second run: provisioner %s is %s, want unchanged", n.Name, p.Name, got)
			}
		}
	}
}

// wins deploys wins, verifies the bridge (deep), and leaves wins as it was
// found: uninstalled again, or with its old wins.exe back.
func (s *suite) wins(t *testing.T) {
	var nodes []v1alpha1.Node
	for _, n := range s.nodes {
		if n.Spec.Wins != nil {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		t.Skip("no node of the file has spec.wins")
	}
	installed := map[string]bool{}
	var before winsReport
	s.swdtJSONAnyCode(t, &before, "wins", "verify", "-c", s.config)
	for _, n := range before.Nodes {
		for _, c := range n.Checks {
			if c.Name == "service" && c.OK {
				installed[n.Name] = true
			}
		}
	}
	restore := s.backup(t, func(n v1alpha1.Node) []string {
		if n.Spec.Wins == nil || !installed[n.Name] {
			return nil
		}
		return []string{n.Spec.Wins.Destination}
	})
	t.Cleanup(func() { s.restoreWins(t, installed, restore) })

	var deploy, verify winsReport
	s.swdtJSON(t, &deploy, "wins", "-c", s.config, "--deep")
	s.swdtJSON(t, &verify, "wins", "verify", "-c", s.config, "--deep")
	for _, r := range []winsReport{deploy, verify} {
		for _, n := range r.Nodes {
			for _, c := range n.Checks {
				if !c.OK {
					t.Errorf("node %s: wins check %s failed: %s", n.Name, c.Name, c.Detail)
				}
			}
		}
	}
}

// winsReport is the JSON of swdt wins and swdt wins verify.
type winsReport struct {
	Nodes []struct {
		Name   string `json:"name"`
		Error  string `json:"error"`
		Checks []struct {
			Name   string `json:"name"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"checks"`
	} `json:"nodes"`
}

// backups maps node name and Windows path to the local copy of the file the
// node had there before the suite changed it, and its SHA-256.
type backups map[string]map[string]backupFile

type backupFile struct {
	local, sha256 string
}

// backup downloads, from every node, the files paths names that exist.
func (s *suite) backup(t *testing.T, paths func(v1alpha1.Node) []string) backups {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out := backups{}
	for _, n := range s.nodes {
		want := paths(n)
		if len(want) == 0 {
			continue
		}
		cfg, err := node.RemoteConfig(n.Spec.Credentials)
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		c, err := remote.Dial(ctx, cfg)
		if err != nil {
			t.Fatalf("node %s: %v", n.Name, err)
		}
		out[n.Name] = map[string]backupFile{}
		for i, p := range want {
			if _, err := c.Stat(ctx, p); errors.Is(err, fs.ErrNotExist) {
				t.Logf("node %s: %s does not exist yet; nothing to put back", n.Name, p)
				continue
			} else if err != nil {
				c.Close()
				t.Fatalf("node %s: %v", n.Name, err)
			}
			local := filepath.Join(s.dir, fmt.Sprintf("%s-%d-%s", n.Name, i, winBase(p)))
			sum, err := download(ctx, c, p, local)
			if err != nil {
				c.Close()
				t.Fatalf("node %s: back up %s: %v", n.Name, p, err)
			}
			out[n.Name][p] = backupFile{local: local, sha256: sum}
			t.Logf("node %s: backed up %s (sha256 %s)", n.Name, p, sum)
		}
		c.Close()
	}
	return out
}

// download copies remotePath to local and returns its SHA-256.
func download(ctx context.Context, c *remote.Client, remotePath, local string) (string, error) {
	f, err := os.Create(local)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	if err := c.Download(ctx, remotePath, io.MultiWriter(f, h)); err != nil {
		f.Close()
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), f.Close()
}

// restoreKubernetes swaps the backed-up binaries back in with a restore
// file, then checks with a dry run that every destination has its old
// SHA-256 again.
func (s *suite) restoreKubernetes(t *testing.T, b backups) {
	var nodes []v1alpha1.Node
	for _, n := range s.nodes {
		r := restoreNode(n)
		for _, p := range n.Spec.Kubernetes.Provisioners {
			f, ok := b[n.Name][p.Destination]
			if !ok {
				continue
			}
			r.Spec.Kubernetes.Provisioners = append(r.Spec.Kubernetes.Provisioners, v1alpha1.ProvisionerSpec{
				Name: p.Name, SourceURL: f.local, Destination: p.Destination, SHA256: f.sha256,
			})
		}
		if len(r.Spec.Kubernetes.Provisioners) > 0 {
			nodes = append(nodes, r)
		}
	}
	if len(nodes) == 0 {
		return
	}
	file := s.writeRestoreFile(t, "restore-kubernetes.json", nodes)
	s.kubeRun(t, "kubernetes", "-c", file)
	for node, provs := range s.kubeRun(t, "kubernetes", "-c", file, "--dry-run") {
		for name, action := range provs {
			if action != "unchanged" {
				t.Errorf("node %s: provisioner %s was not restored: the node's binary differs from the backup (%s)", node, name, action)
			}
		}
	}
}

// restoreWins uninstalls wins where the suite installed it and puts back
// the old wins.exe where it was installed.
func (s *suite) restoreWins(t *testing.T, installed map[string]bool, b backups) {
	var uninstall, swap []v1alpha1.Node
	for _, n := range s.nodes {
		if n.Spec.Wins == nil {
			continue
		}
		if !installed[n.Name] {
			r := restoreNode(n)
			r.Spec.Wins = &v1alpha1.WinsSpec{SourceURL: "unused.exe", Destination: n.Spec.Wins.Destination}
			uninstall = append(uninstall, r)
			continue
		}
		if f, ok := b[n.Name][n.Spec.Wins.Destination]; ok {
			r := restoreNode(n)
			w := *n.Spec.Wins
			w.SourceURL, w.SHA256 = f.local, f.sha256
			r.Spec.Wins = &w
			swap = append(swap, r)
		}
	}
	if len(uninstall) > 0 {
		s.swdtOK(t, "wins", "uninstall", "-c", s.writeRestoreFile(t, "restore-wins-uninstall.json", uninstall))
	}
	if len(swap) > 0 {
		s.swdtOK(t, "wins", "-c", s.writeRestoreFile(t, "restore-wins.json", swap))
	}
}

// restoreNode is n with its credentials only.
func restoreNode(n v1alpha1.Node) v1alpha1.Node {
	var r v1alpha1.Node
	r.Name = n.Name
	r.Spec.Credentials = n.Spec.Credentials
	return r
}

// writeRestoreFile writes nodes as a NodeList (JSON is YAML) and returns
// its path. Paths in the loaded nodes are already absolute.
func (s *suite) writeRestoreFile(t *testing.T, name string, nodes []v1alpha1.Node) string {
	t.Helper()
	list := map[string]any{"apiVersion": "windows.k8s.io/v1alpha1", "kind": "NodeList", "items": nil}
	var items []map[string]any
	for _, n := range nodes {
		items = append(items, map[string]any{
			"apiVersion": "windows.k8s.io/v1alpha1", "kind": "Node",
			"metadata": map[string]string{"name": n.Name}, "spec": n.Spec,
		})
	}
	list["items"] = items
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.dir, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kubeRun runs swdt kubernetes with -o json and returns each node's
// provisioner actions. A node error fails the test.
func (s *suite) kubeRun(t *testing.T, args ...string) map[string]map[string]string {
	t.Helper()
	var r struct {
		Nodes []struct {
			Name         string `json:"name"`
			Error        string `json:"error"`
			Provisioners []struct {
				Name   string `json:"name"`
				Action string `json:"action"`
				Error  string `json:"error"`
			} `json:"provisioners"`
		} `json:"nodes"`
	}
	s.swdtJSON(t, &r, args...)
	out := map[string]map[string]string{}
	for _, n := range r.Nodes {
		out[n.Name] = map[string]string{}
		for _, p := range n.Provisioners {
			out[n.Name][p.Name] = p.Action
		}
	}
	return out
}

// swdtOK runs swdt and fails the test unless it exits 0.
func (s *suite) swdtOK(t *testing.T, args ...string) string {
	t.Helper()
	stdout, code := s.run(t, args...)
	if code != 0 {
		t.Fatalf("swdt %s: exit %d", strings.Join(args, " "), code)
	}
	return stdout
}

// swdtJSON runs swdt with -o json, requires exit 0 and decodes stdout.
func (s *suite) swdtJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	if err := json.Unmarshal([]byte(s.swdtOK(t, append(args, "-o", "json")...)), v); err != nil {
		t.Fatalf("swdt %s: stdout is not JSON: %v", strings.Join(args, " "), err)
	}
}

// swdtJSONAnyCode runs swdt with -o json and decodes stdout whatever the
// exit code (swdt wins verify exits 3 when wins is not installed).
func (s *suite) swdtJSONAnyCode(t *testing.T, v any, args ...string) {
	t.Helper()
	stdout, _ := s.run(t, append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("swdt %s: stdout is not JSON: %v", strings.Join(args, " "), err)
	}
}

// run runs swdt, logs its stderr, and returns its stdout and exit code.
func (s *suite) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	stdout, _, code := s.runAll(t, args...)
	return stdout, code
}

// runAll is run that also returns stderr.
func (s *suite) runAll(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, s.swdt, append(args, "--no-color")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("$ swdt %s  (%s)\n%s%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), stderr.String(), stdout.String())
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), stderr.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("swdt %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), 0
}

// buildSwdt builds the swdt under test.
func buildSwdt(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "swdt")
	if out, err := exec.Command("go", "build", "-o", bin, "sigs.k8s.io/swdt/cmd/swdt").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// winBase is the file name of a Windows path.
func winBase(p string) string {
	return p[strings.LastIndexAny(p, `\/`)+1:]
}
