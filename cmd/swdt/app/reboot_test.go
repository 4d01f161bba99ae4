package app

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

func TestRebootWait(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	file := restartFile(t, ts, "10250") // kubelet's provisioner
	if err := n.ConfigureService("kube-proxy", func(cfg *simnode.ServiceConfig) { cfg.StartType = simnode.StartManual }); err != nil {
		t.Fatal(err)
	}
	before := ts.State()

	code, out, errOut := run(t, "reboot", "-c", file, "--wait", "-o", "json")
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	doc := decodeJSON[report.Reboot](t, out)
	if doc.Kind != report.KindReboot || doc.Result != report.Changed || !doc.Waited || doc.Node != "winworker" {
		t.Fatalf("document: %s", out)
	}
	if !(0 < doc.DownAfterMs && doc.DownAfterMs <= doc.SSHBackAfterMs && doc.SSHBackAfterMs <= doc.ServicesRunningAfterMs) {
		t.Errorf("times: down %d, ssh %d, services %d ms", doc.DownAfterMs, doc.SSHBackAfterMs, doc.ServicesRunningAfterMs)
	}
	if len(doc.Services) != 1 || doc.Services[0].Service != "kubelet" || doc.Services[0].Status != "Running" || doc.Services[0].RunningAfterMs < doc.SSHBackAfterMs {
		t.Errorf("services: %+v", doc.Services)
	}
	if boots := n.Boots(); len(boots) != 1 {
		t.Errorf("%d reboots, want 1", len(boots))
	}
	after := ts.State()
	for _, name := range []string{"kubelet", "containerd"} {
		if s := after.Services[name]; s.Status != simnode.StatusRunning || s.PID == before.Services[name].PID {
			t.Errorf("%s after the reboot: %s, PID %d (was %d)", name, s.Status, s.PID, before.Services[name].PID)
		}
	}
	if s := after.Services["kube-proxy"]; s.Status != simnode.StatusStopped {
		t.Errorf("kube-proxy (Manual) is %s after the reboot, want Stopped", s.Status)
	}

	// A service that does not start at boot: the wait ends at --timeout
	// with its start type named.
	file = writeNodeFile(t, t.TempDir(), nodeHeader("winworker", ts.Credentials())+`  kubernetes:
    provisioners:
    - name: kube-proxy
      sourceURL: ./kube-proxy.exe
      destination: 'C:\k\kube-proxy.exe'
`)
	code, out, errOut = run(t, "reboot", "-c", file, "winworker", "--wait", "--timeout", "8s")
	if code != exitcode.Failure || !strings.Contains(errOut, "kube-proxy (Stopped, start type Manual: Windows does not start it at boot)") {
		t.Errorf("exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestRebootRefused(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := restartFile(t, ts, "10250")
	if code, _, errOut := run(t, "reboot", "-c", file, "winworker", "extra"); code != exitcode.Usage || !strings.Contains(errOut, "takes a node name only") {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	if code, _, errOut := run(t, "reboot", "-c", file, "--wait", "--timeout", "0s"); code != exitcode.Usage || !strings.Contains(errOut, `invalid argument "0s" for "--timeout" flag: must be more than 0`) {
		t.Errorf("exit %d\n%s", code, errOut)
	}
	if len(ts.Node().Boots()) != 0 {
		t.Errorf("the node rebooted")
	}
}

// setup says a reboot is needed (Chocolatey 2 installed .NET 4.8 on a
// node with 4.7.2), swdt reboot --wait does it, and setup then finishes.
func TestSetupRebootSetup(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	if err := ts.Node().SetRegistryDWord(simnode.KeyNetFx4, "Release", simnode.NetFx472Server2019); err != nil {
		t.Fatal(err)
	}
	file := setupNodeFile(t, ts, "Administrator", "    chocoPackages: [vim]\n")
	code, _, errOut := run(t, "setup", "-c", file)
	if code == exitcode.OK || !strings.Contains(errOut, "swdt reboot NODE --wait") {
		t.Fatalf("first setup: exit %d, want a failure that names swdt reboot\n%s", code, errOut)
	}
	if code, _, errOut := run(t, "reboot", "-c", file, "--wait"); code != exitcode.OK {
		t.Fatalf("reboot: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := run(t, "setup", "-c", file); code != exitcode.OK {
		t.Errorf("setup after the reboot: exit %d\n%s", code, errOut)
	}
}
