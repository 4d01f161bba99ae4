package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/internal/syncbuf"

	"sigs.k8s.io/swdt/pkg/simnode"
)

func TestHelpDocumentsMarkersAndFaults(t *testing.T) {
	var out syncbuf.Buffer
	err := run(context.Background(), []string{"--help"}, &out, &out, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"SIMULATED", "not Windows", simnode.MarkerCrashOnStart, simnode.MarkerHangOnStop, simnode.MarkerWinsNoPipe,
		"--cut-after-bytes", "--fail-op", "--op-latency", "--choco-download-fails", "faults.json", "--non-admin", "untrusted program",
		simnode.MarkerExitOnStop, "--kubelet-setup", "--scanner-hold", "--language-mode", "--arch"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		{},                           // no state dir
		{"--state-dir", t.TempDir()}, // nobody could log in
		{"--state-dir", t.TempDir(), "--password", "x", "--op-latency", "bad"},
		{"--state-dir", t.TempDir(), "--password", "x", "--non-admin", "mallory"},
		{"--state-dir", t.TempDir(), "--password", "x", "--non-admin", "mallory=" + filepath.Join(t.TempDir(), "missing.pub")},
		{"--state-dir", t.TempDir(), "--password", "x", "--kubelet-setup", "choco"},
		{"--state-dir", t.TempDir(), "--password", "x", "--language-mode", "strict"},
		{"--state-dir", t.TempDir(), "--password", "x", "--scanner-hold", "-1s"},
		{"--state-dir", t.TempDir(), "--password", "x", "--arch", "386"},
	}
	for _, args := range tests {
		var out syncbuf.Buffer
		err := run(context.Background(), args, &out, &out, nil)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: err = %v, want a usage error", args, err)
		}
	}
}

func TestRunPrintsNodeYAMLAndStopsOnCancel(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "id.pub")
	if err := os.WriteFile(pub, []byte("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGQ9LRuXq1zhKgt3Tb0OV2VZ9uKxDrnJqVv0kTdoF9Zn test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	ready := make(chan *simnode.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--state-dir", state, "--authorized-key", pub, "--fail-op", "node-facts",
			"--non-admin", "mallory=" + pub, "--non-admin", "eve=" + pub},
			&stdout, &stderr, func(s *simnode.Server) { ready <- s })
	}()
	var srv *simnode.Server
	select {
	case srv = <-ready:
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("not ready")
	}
	out := stdout.String()
	for _, want := range []string{"SIMULATED", srv.Addr(), srv.HostKeyFingerprint(), "apiVersion: windows.k8s.io/v1alpha1", "kind: Node",
		"hostname: " + srv.Addr(), "username: Administrator", "hostKeyPolicy: accept-new", "knownHostsFile: "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if f := srv.Faults(); len(f.FailOps) != 1 {
		t.Errorf("fault flags not applied: %+v", f)
	}
	for _, name := range []string{"mallory", "eve"} {
		if n, err := srv.NodeAs(name); err != nil || n.IsAdmin() {
			t.Errorf("--non-admin %s: %v, admin %v", name, err, err == nil && n.IsAdmin())
		}
	}
	if _, err := os.Stat(filepath.Join(state, "known_hosts")); err != nil {
		t.Error(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop on cancel")
	}
}
