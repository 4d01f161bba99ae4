package simnode

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

// needTool skips when an OpenSSH client is missing, except in CI
// (CI=true), where a missing tool must fail rather than silently pass.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required in CI: %v", name, err)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

func opensshArgs(ts *TestServer, portFlag string) []string {
	_, port, _ := strings.Cut(ts.Addr(), ":")
	return []string{
		portFlag, port,
		"-i", ts.KeyFile,
		"-o", "IdentitiesOnly=yes",
		"-o", "IdentityAgent=none",
		"-o", "BatchMode=yes",
		"-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + ts.KnownHostsFile,
		"-o", "GlobalKnownHostsFile=/dev/null",
		"-F", "/dev/null",
	}
}

func TestOpenSSHClientRunsOps(t *testing.T) {
	sshBin := needTool(t, "ssh")
	ts := StartTest(t)
	installAgent(t, ts)
	args := append(opensshArgs(ts, "-p"), "-T", "Administrator@127.0.0.1", ops.CommandLine(testAgentPath, ops.NodeFacts.Name))
	cmd := exec.Command(sshBin, args...)
	cmd.Stdin = strings.NewReader("{}")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ssh: %v\n%s", err, stderr.String())
	}
	env, err := ops.ParseEnvelope(stdout.Bytes())
	if err != nil || !env.OK || !strings.Contains(string(env.Data), "Windows Server 2022") {
		t.Fatalf("envelope %+v, err %v", env, err)
	}

	args = append(opensshArgs(ts, "-p"), "-T", "Administrator@127.0.0.1", "dir", `C:\`)
	cmd = exec.Command(sshBin, args...)
	stderr.Reset()
	cmd.Stderr = &stderr
	err = cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("dir: err %v, want exit status 1", err)
	}
	if !strings.Contains(stderr.String(), "'dir' is not recognized as an internal or external command") {
		t.Errorf("stderr %q", stderr.String())
	}
}

func TestOpenSSHSFTPBatch(t *testing.T) {
	sftpBin := needTool(t, "sftp")
	ts := StartTest(t)
	dir := t.TempDir()
	local := filepath.Join(dir, "kubelet.exe")
	content := bytes.Repeat([]byte("new kubelet build "), 200_000) // ~3.6 MB
	if err := os.WriteFile(local, content, 0o644); err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(dir, "back.exe")
	batch := filepath.Join(dir, "batch")
	cmds := fmt.Sprintf("put %s /C:/k/kubelet.exe.swdt-new\nrename /C:/k/kubelet.exe /C:/k/kubelet.exe.swdt-bak\nrename /C:/k/kubelet.exe.swdt-new /C:/k/kubelet.exe\nget /C:/k/kubelet.exe %s\n-put %s /C:/k/kubelet.exe.swdt-bak\nls /C:/k\n", local, back, local)
	if err := os.WriteFile(batch, []byte(cmds), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(opensshArgs(ts, "-P"), "-b", batch, "Administrator@127.0.0.1")
	out, err := exec.Command(sftpBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sftp -b: %v\n%s", err, out)
	}
	got, err := ts.Node().ReadFile(`C:\k\kubelet.exe`)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("C:\\k\\kubelet.exe after put+rename: %d bytes, err %v", len(got), err)
	}
	host := filepath.Join(ts.StateDir(), "fs", "C", "k", "kubelet.exe")
	if fi, err := os.Stat(host); err != nil || fi.Size() != int64(len(content)) {
		t.Errorf("not at the mapped host path %s: %v", host, err)
	}
	if back, err := os.ReadFile(back); err != nil || !bytes.Equal(back, content) {
		t.Errorf("get: %d bytes, %v", len(back), err)
	}
	// The old binary, renamed while kubelet runs, could not be overwritten
	// (OpenSSH's sftp prints the status code, not the server's message).
	if !strings.Contains(string(out), `dest open "/C:/k/kubelet.exe.swdt-bak": Failure`) {
		t.Errorf("overwriting the running (renamed) binary did not report a sharing violation:\n%s", out)
	}
	if !strings.Contains(string(out), "kubelet.exe.swdt-bak") {
		t.Errorf("ls output:\n%s", out)
	}
}
