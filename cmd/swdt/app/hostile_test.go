package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkg/sftp"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// planter is a non-administrator of the node writing over SFTP.
type planter struct {
	t  *testing.T
	sc *sftp.Client
	// planted are the files it wrote, with their content.
	planted map[string]string
}

func newPlanter(t *testing.T, ts *simnode.TestServer, user string) *planter {
	t.Helper()
	return &planter{t: t, sc: ts.SFTP(user), planted: map[string]string{}}
}

func sftpPath(p string) string { return "/" + strings.ReplaceAll(p, `\`, "/") }

// plant writes content at p, creating its folders; ok says whether
// Windows' default ACLs let it.
func (p *planter) plant(path, content string) (ok bool) {
	dir := path[:strings.LastIndex(path, `\`)]
	_ = p.sc.MkdirAll(sftpPath(dir))
	f, err := p.sc.Create(sftpPath(path))
	if err != nil {
		return false
	}
	_, err = f.Write([]byte(content))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false
	}
	p.planted[path] = content
	return true
}

// The "Done when" of the footprint's security: a non-administrator plants
// files wherever Windows' defaults let it, under every name swdt uses
// (its agent, lock and journal, staged names, backups, wins' staged
// config and smoke program), before and after swdt's first run; swdt
// kubernetes, wins, status, logs and exec as Administrator still work,
// run nothing planted, move or delete nothing a plant names, and leave
// the footprint unwritable by that account.
func TestNonAdminPlantsChangeNothing(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	admin := ts.Node()
	// wins' folder exists from an earlier deploy by an administrator.
	if err := admin.MkdirAll(`C:\etc\rancher\wins`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range map[string]string{"kubelet.exe": "MZ kubelet v2\n", "kube-proxy.exe": "MZ kube-proxy v2\n", "wins.exe": "MZ rancher/wins v0.15.1\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc := nodeHeader("winworker", ts.Credentials()) + `  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
    - name: kube-proxy
      sourceURL: ./kube-proxy.exe
      destination: 'C:\k\kube-proxy.exe'
  wins:
    sourceURL: ./wins.exe
`
	file := writeNodeFile(t, dir, doc)
	digest, err := agentbin.Digest("amd64")
	if err != nil {
		t.Fatal(err)
	}
	victim := `C:\Windows\System32\whoami.exe`
	victimBytes, err := admin.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	journal, _ := json.Marshal(ops.SwapJournal{Owner: ops.LockOwner{RunID: "evil"}, Request: ops.ServiceSwapRequest{
		Items: []ops.SwapItem{{Service: "kubelet", Destination: victim, Staged: `C:\ProgramData\evil.exe`, Backup: `C:\k\kubelet.exe`,
			HealthChecks: []ops.HealthCheckSpec{{Command: []string{`C:\ProgramData\evil.exe`}}}}},
		StartOrder: []string{"kubelet"}}})
	lock := `{"owner":{"runId":"evil","host":"x","pid":1},"staleAfterMs":1,"staged":["C:\\Windows\\System32\\whoami.exe"]}`

	m := newPlanter(t, ts, "mallory")
	plantEverywhere := func(round string) {
		t.Helper()
		for _, d := range []string{ops.AgentDir, `C:\ProgramData\swdt`} {
			// The footprint must refuse every one; the old place
			// (C:\ProgramData\swdt) takes them and is never read.
			for name, content := range map[string]string{
				`\` + ops.AgentPath(digest)[len(ops.AgentDir)+1:]: "MZ evil agent " + round,
				`\swap.lock`:                   lock,
				`\swap-journal.json`:           string(journal),
				`\swap-journal.json.tmp`:       string(journal),
				`\swdt-smoke.exe`:              "MZ evil smoke " + round,
				`\rancher-wins-swdt-smoke.exe`: "MZ evil smoke " + round,
			} {
				ok := m.plant(d+name, content)
				if d == ops.AgentDir && ok {
					t.Errorf("%s: mallory planted %s%s", round, d, name)
				}
			}
		}
		for _, p := range []string{`C:\k\kubelet.exe.swdt-new`, `C:\k\kubelet.exe.swdt-failed`, `C:\k\kube-proxy.exe.swdt-part`,
			`C:\k\kubelet.exe.swdt-new-evil`, `C:\k\kubelet.exe.swdt-new-evil.swdt-zst`, `C:\etc\rancher\wins\config.swdt-new`,
			`C:\etc\rancher\wins\swdt-smoke.exe`, `C:\etc\rancher\wins\rancher-wins-swdt-smoke.exe`, `C:\ProgramData\evil.exe`} {
			if _, done := m.planted[p]; !done && !m.plant(p, "MZ planted "+round) {
				t.Errorf("%s: Windows' defaults let mallory write %s, but simnode refused", round, p)
			}
		}
	}
	runOK := func(args ...string) string {
		t.Helper()
		code, out, errOut := run(t, args...)
		if code != exitcode.OK {
			t.Fatalf("swdt %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}

	plantEverywhere("before")
	runOK("kubernetes", "-c", file, "--no-color", "--settle", "100ms", "--health-timeout", "500ms")
	plantEverywhere("after")
	if err := os.WriteFile(filepath.Join(dir, "kubelet.exe"), []byte("MZ kubelet v3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runOK("kubernetes", "-c", file, "--no-color", "--settle", "100ms", "--health-timeout", "500ms")
	runOK("wins", "-c", file, "--deep", "--no-color", "--settle", "100ms")
	runOK("status", "-c", file, "--no-color")
	runOK("logs", "-c", file, "winworker", "kubelet", "-n", "1")
	if out := runOK("exec", "-c", file, "winworker", "hostname"); !strings.Contains(out, "WIN-SIMNODE01") {
		t.Errorf("exec printed %q", out)
	}

	if got := ts.UntrustedRuns(); len(got) != 0 {
		t.Errorf("ran planted programs: %v", got)
	}
	for p, content := range m.planted {
		if p == `C:\etc\rancher\wins\config.swdt-new` {
			// The name swdt itself writes wins' new config at: a file
			// found there is removed, never adopted.
			continue
		}
		if got, err := admin.ReadFile(p); err != nil || string(got) != content {
			t.Errorf("plant %s was moved, deleted or changed (%q, %v)", p, got, err)
		}
	}
	if got, _ := admin.ReadFile(victim); string(got) != string(victimBytes) {
		t.Errorf("%s changed", victim)
	}
	for dest, want := range map[string]string{`C:\k\kubelet.exe`: "MZ kubelet v3\n", `C:\k\kube-proxy.exe`: "MZ kube-proxy v2\n"} {
		if got, _ := admin.ReadFile(dest); string(got) != want {
			t.Errorf("%s holds %q, want %q", dest, got, want)
		}
		if owner, _ := admin.Owner(dest); owner != simnode.AccountAdministrators {
			t.Errorf("%s belongs to %s", dest, owner)
		}
	}
	if owner, _ := admin.Owner(`C:\etc\rancher\wins\config`); owner != simnode.AccountAdministrators {
		t.Errorf("wins' config belongs to %s", owner)
	}
	if m.plant(ops.AgentDir+`\late.exe`, "x") || m.sc.Mkdir(sftpPath(ops.AgentDir+`\sub`)) == nil {
		t.Error("mallory may write the footprint after swdt's runs")
	}
}
