package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDemo runs `make demo` end to end: it builds swdt and simnode, then
// the demo cross-builds its Windows binaries, starts simnode and runs every
// step.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds swdt, simnode and four Windows binaries; skipped with -short")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "sigs.k8s.io/swdt/cmd/swdt", "sigs.k8s.io/swdt/cmd/simnode")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := run(ctx, options{Swdt: filepath.Join(bin, "swdt"), Simnode: filepath.Join(bin, "simnode"), Go: "go", Out: &out})
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	story := out.String()
	wants := []string{
		"━━━ 1/8 swdt config validate ━━━",
		"kubelet's node says: hello & goodbye",
		"kubelet (Running)",
		"chocolatey       changed  installed Chocolatey 2.2.2",
		"kubelet      updated",
		"kube-proxy   unchanged",
		"get-version  passed",
		"deep         passed",
		"simnode stopped.",
	}
	// The swdt vm part runs when libvirtd is installed, and says so when
	// it is not.
	if _, err := os.Stat(libvirtdPath); err == nil {
		wants = append(wants, "$ swdt vm revert -c vm.yaml clean", "win2022  win2022  clean     running", "libvirtd stopped.", "✔ demo passed: 11 steps")
	} else {
		wants = append(wants, "skipped: libvirtd is not installed", "✔ demo passed: 8 steps")
	}
	for _, want := range wants {
		if !strings.Contains(story, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, story)
		}
	}
	// The demo directory is gone.
	dir := strings.TrimSuffix(strings.Fields(strings.SplitN(story, "keeps its state in ", 2)[1])[0], ".")
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("demo directory %s was not removed: %v", dir, err)
	}
}

// TestDemoFailingStep checks that a failed step fails the demo, names the
// step, and still stops simnode and removes the demo directory.
func TestDemoFailingStep(t *testing.T) {
	if testing.Short() {
		t.Skip("builds simnode and four Windows binaries; skipped with -short")
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "sigs.k8s.io/swdt/cmd/simnode")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// A stand-in swdt that fails every command.
	swdt := filepath.Join(bin, "swdt")
	if err := os.WriteFile(swdt, []byte("#!/bin/sh\necho 'no such node' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(context.Background(), options{Swdt: swdt, Simnode: filepath.Join(bin, "simnode"), Go: "go", Out: &out})
	if err == nil || !strings.Contains(err.Error(), "step 1 (swdt config validate) failed") || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("err = %v\n%s", err, out.String())
	}
	story := out.String()
	if !strings.Contains(story, "simnode stopped.") || strings.Contains(story, "2/5") {
		t.Errorf("want the demo to stop after step 1 and stop simnode:\n%s", story)
	}
}

func TestAllUnchanged(t *testing.T) {
	table := "PROVISIONER  ACTION     SENT  TIME  DOWNTIME\n" +
		"containerd   unchanged  0 B   -     -\nkubelet      unchanged  0 B   -     -\nkube-proxy   unchanged  0 B   -     -\n"
	if err := allUnchanged(table); err != nil {
		t.Errorf("all unchanged: %v", err)
	}
	if err := allUnchanged(strings.Replace(table, "kubelet      unchanged", "kubelet      updated", 1)); err == nil || !strings.Contains(err.Error(), "kubelet was updated") {
		t.Errorf("an update: err = %v", err)
	}
	if err := allUnchanged("PROVISIONER  ACTION\n"); err == nil {
		t.Error("an empty table passed")
	}
}
