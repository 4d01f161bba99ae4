package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/internal/releasetest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// releaseFixture is a join fixture whose binaries come from a release
// mirror on loopback, in the official layout (SWDT_*_RELEASE_URL).
type releaseFixture struct {
	*joinFixture
	srv   *releasetest.Server
	cache string
	ctrd  map[string][]byte
	cni   map[string][]byte
}

func newReleaseFixture(t *testing.T, opts ...simnode.TestOption) *releaseFixture {
	t.Helper()
	fx := &releaseFixture{joinFixture: newJoinFixture(t, opts...), srv: releasetest.Start(t)}
	fx.srv.Mirror(t)
	fx.cache = filepath.Join(fx.dir, "cache")
	fx.srv.Kubernetes("v1.37.2", "kubelet.exe", simnode.KubeletBinary("v1.37.2"))
	fx.ctrd = map[string][]byte{"containerd.exe": []byte("MZ containerd stand-in\n"), "containerd-shim-runhcs-v1.exe": []byte("MZ shim\n"), "ctr.exe": []byte("MZ ctr\n")}
	fx.srv.Containerd("2.1.4", fx.ctrd)
	fx.cni = map[string][]byte{"win-bridge.exe": []byte("MZ win-bridge\n"), "host-local.exe": []byte("MZ host-local\n")}
	fx.srv.CNI("1.6.2", fx.cni)
	fx.writeRelease("")
	return fx
}

// writeRelease writes a node file taking every binary from a release;
// kubeletVersion "" means the control plane's.
func (fx *releaseFixture) writeRelease(kubeletVersion string) {
	fx.t.Helper()
	version := ""
	if kubeletVersion != "" {
		version = "\n      version: " + kubeletVersion
	}
	spec := nodeHeader("sim", fx.ts.Credentials()) + fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: containerd
      sourceURL: release:containerd
      version: 2.1.4
      destination: C:\Program Files\containerd\containerd.exe
    - name: containerd-shim
      service: containerd
      sourceURL: release:containerd
      version: 2.1.4
      destination: C:\Program Files\containerd\containerd-shim-runhcs-v1.exe
    - name: win-bridge
      service: None
      sourceURL: release:cni
      version: 1.6.2
      destination: C:\opt\cni\bin\win-bridge.exe
    - name: host-local
      service: None
      sourceURL: release:cni
      version: 1.6.2
      destination: C:\opt\cni\bin\host-local.exe
    - name: kubelet%s
      sourceURL: release:kubernetes
      destination: C:\k\kubelet.exe
    join:
      kubeconfig: %q
      timeout: 90s
`, version, fx.cl.Kubeconfig)
	if err := os.WriteFile(fx.config, []byte(spec), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

// A fresh node joins with the kubelet of the control plane's release,
// containerd and its shim out of containerd's release archive and CNI
// plugins out of theirs, each verified against the release's checksum
// file; a second join changes nothing and needs no mirror; --reset
// removes every binary.
func TestJoinFromReleases(t *testing.T) {
	fx := newReleaseFixture(t)
	code, doc, errOut := fx.run("join", "--cache-dir", fx.cache)
	if code != exitcode.OK || len(doc.Nodes) != 1 {
		t.Fatalf("join: exit %d\n%s", code, errOut)
	}
	got := doc.Nodes[0]
	if got.Result != "changed" || !got.Node.Registered || got.Node.KubeletVersion != "v1.37.2" {
		t.Fatalf("join = %+v\n%s", got.Report, errOut)
	}
	n := fx.ts.Node()
	for dest, want := range map[string][]byte{
		`C:\k\kubelet.exe`:                                          simnode.KubeletBinary("v1.37.2"),
		`C:\Program Files\containerd\containerd.exe`:                fx.ctrd["containerd.exe"],
		`C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`: fx.ctrd["containerd-shim-runhcs-v1.exe"],
		`C:\opt\cni\bin\win-bridge.exe`:                             fx.cni["win-bridge.exe"],
		`C:\opt\cni\bin\host-local.exe`:                             fx.cni["host-local.exe"],
	} {
		if b, err := n.ReadFile(dest); err != nil || string(b) != string(want) {
			t.Errorf("%s holds %q (%v), want %q", dest, b, err, want)
		}
	}
	if n.Exists(`C:\Program Files\containerd\ctr.exe`) {
		t.Error("ctr.exe was installed, though no provisioner names it")
	}
	if svc := fx.ts.State().Services["containerd"]; svc == nil || svc.Status != "Running" {
		t.Errorf("containerd service = %+v", svc)
	}
	if acl, _ := n.ACL(ops.JoinCNIBinDir); !simnode.AdminOnlyACL(acl) {
		t.Errorf("%s is not restricted to Administrators and SYSTEM: %+v", ops.JoinCNIBinDir, acl)
	}

	// The second run needs no mirror: the checksum files and the release
	// files are in the cache, found by URL and by digest.
	for _, p := range []string{"/kubernetes/v1.37.2/bin/windows/amd64/kubelet.exe", "/containerd/v2.1.4/containerd-2.1.4-windows-amd64.tar.gz", "/cni/v1.6.2/cni-plugins-windows-amd64-v1.6.2.tgz"} {
		fx.srv.Remove(p)
		fx.srv.Remove(p + ".sha256")
		fx.srv.Remove(p + ".sha256sum")
	}
	code, doc, errOut = fx.run("join", "--cache-dir", fx.cache)
	if code != exitcode.OK || doc.Nodes[0].Result != "unchanged" {
		t.Fatalf("second join: exit %d, %+v\n%s", code, doc.Nodes[0].Report, errOut)
	}

	code, doc, errOut = fx.run("join", "--reset", "--cache-dir", fx.cache)
	if code != exitcode.OK || doc.Nodes[0].Result != "removed" {
		t.Fatalf("reset: exit %d, %+v\n%s", code, doc.Nodes[0].Report, errOut)
	}
	for _, f := range []string{`C:\k\kubelet.exe`, `C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`, `C:\opt\cni\bin\win-bridge.exe`, `C:\opt\cni\bin\host-local.exe`} {
		if n.Exists(f) {
			t.Errorf("%s is still there after --reset", f)
		}
	}
}

// A release that cannot be trusted or used is refused with what to do
// before the node or the cluster changes.
func TestJoinFromReleasesRefusesBeforeChanging(t *testing.T) {
	fx := newReleaseFixture(t)
	kubelet := "/kubernetes/v1.37.2/bin/windows/amd64/kubelet.exe"
	for _, tc := range []struct {
		name    string
		version string
		before  func()
		want    string
	}{
		{name: "checksum mismatch", before: func() { fx.srv.Put(kubelet+".sha256", []byte(releasetest.Sum([]byte("another build")))) },
			want: "sha256 mismatch"},
		{name: "missing checksum file", before: func() { fx.srv.Remove(kubelet + ".sha256") },
			want: "read the release's checksum file: download " + fx.srv.URL + kubelet + ".sha256: server answered 404 Not Found; check the version, and SWDT_KUBERNETES_RELEASE_URL when it names a mirror"},
		{name: "a release that is not published", version: "v1.37.9", want: "v1.37.9/bin/windows/amd64/kubelet.exe.sha256: server answered 404 Not Found"},
		{name: "a version the skew policy forbids", version: "v1.38.0", want: "newer than the API server"},
		{name: "four minors older", version: "v1.33.4", want: "more than three minor versions older"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx.srv.Kubernetes("v1.37.2", "kubelet.exe", simnode.KubeletBinary("v1.37.2"))
			if tc.before != nil {
				tc.before()
			}
			fx.writeRelease(tc.version)
			code, _, errOut := fx.run("join", "--cache-dir", filepath.Join(t.TempDir(), "cache"))
			if code == exitcode.OK || !strings.Contains(errOut, tc.want) {
				t.Fatalf("exit %d, want an error saying %q:\n%s", code, tc.want, errOut)
			}
			if fx.ts.State().Services["kubelet"] != nil || fx.ts.State().Services["containerd"] != nil || fx.ts.Node().Exists(ops.JoinBootstrapKubeconfig) || fx.tokens() != 0 {
				t.Fatal("the refused join changed the node or the cluster")
			}
		})
	}
}

// A non-administrator of the node who made C:\etc\kubernetes before the
// join (C:\ lets any user create folders) owns what it holds: swdt join
// refuses the node before it creates a token or writes a file, says
// what to do, and joins once an administrator removed the folder.
func TestJoinRefusesAFolderANonAdministratorMade(t *testing.T) {
	fx := newJoinFixture(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	m := newPlanter(t, fx.ts, "mallory")
	if !m.plant(`C:\etc\kubernetes\kubelet.conf`, "apiVersion: v1\nkind: Config\n") {
		t.Fatal(`Windows' defaults let mallory create C:\etc\kubernetes, but simnode refused`)
	}
	code, _, errOut := fx.run("join")
	want := `the node's folders for the kubelet's credentials are not safe: C:\etc\kubernetes is owned by mallory`
	if code == exitcode.OK || !strings.Contains(errOut, want) || !strings.Contains(errOut, "rmdir /s /q") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("exit %d, want an error saying %q, what to do and that nothing was changed:\n%s", code, want, errOut)
	}
	if fx.ts.State().Services["kubelet"] != nil || fx.ts.Node().Exists(ops.JoinBootstrapKubeconfig) || fx.tokens() != 0 {
		t.Fatal("the refused join changed the node or the cluster")
	}

	if err := fx.ts.Node().RemoveAll(`C:\etc\kubernetes`); err != nil {
		t.Fatal(err)
	}
	if code, doc, errOut := fx.run("join"); code != exitcode.OK || doc.Nodes[0].Result != "changed" {
		t.Fatalf("join after the folder was removed: exit %d\n%s", code, errOut)
	}
	if m.plant(`C:\etc\kubernetes\planted.conf`, "x") || m.plant(ops.JoinCertDir+`\kubelet.key`, "x") {
		t.Error("mallory may create files in the kubelet's folders after the join")
	}
}

// swdt kubernetes takes a provisioner's binary from a release too (here
// kube-proxy of a version, and containerd's shim out of a local archive
// in the release's form); without a join section, release:kubernetes
// needs its version, and the file is refused before anything runs.
func TestKubernetesFromReleases(t *testing.T) {
	srv := releasetest.Start(t)
	srv.Mirror(t)
	proxy := []byte("MZ kube-proxy v1.37.2\n")
	srv.Kubernetes("v1.37.2", "kube-proxy.exe", proxy)
	ts := simnode.StartTest(t)
	dir := t.TempDir()
	shim := []byte("MZ shim from a local archive\n")
	if err := os.WriteFile(filepath.Join(dir, "containerd-2.1.4-windows-amd64.tar.gz"), releasetest.Archive(map[string][]byte{"bin/containerd-shim-runhcs-v1.exe": shim}), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := func(version string) string {
		return nodeHeader("sim", ts.Credentials()) + `  kubernetes:
    provisioners:
    - name: kube-proxy
      sourceURL: release:kubernetes` + version + `
      destination: 'C:\k\kube-proxy.exe'
    - name: containerd-shim
      service: containerd
      sourceURL: ./containerd-2.1.4-windows-amd64.tar.gz
      destination: 'C:\Program Files\containerd\containerd-shim-runhcs-v1.exe'
`
	}
	file := writeNodeFile(t, dir, doc(""))
	if code, _, errOut := run(t, "kubernetes", "-c", file, "--no-color"); code != exitcode.Usage || !strings.Contains(errOut, "spec.kubernetes.provisioners[0].version: Required value: sourceURL release:kubernetes takes the binary of this Kubernetes version") {
		t.Fatalf("no version: exit %d, want 2 and the field:\n%s", code, errOut)
	}
	file = writeNodeFile(t, dir, doc("\n      version: v1.37.2"))
	args := []string{"kubernetes", "-c", file, "--no-color", "--cache-dir", filepath.Join(dir, "cache"), "--settle", "100ms"}
	if code, out, errOut := run(t, args...); code != exitcode.OK {
		t.Fatalf("swdt kubernetes: exit %d\n%s\n%s", code, out, errOut)
	}
	for dest, want := range map[string][]byte{`C:\k\kube-proxy.exe`: proxy, `C:\Program Files\containerd\containerd-shim-runhcs-v1.exe`: shim} {
		if got, err := ts.Node().ReadFile(dest); err != nil || string(got) != string(want) {
			t.Errorf("%s holds %q (%v), want %q", dest, got, err, want)
		}
	}
	if code, out, errOut := run(t, append(args, "-o", "json")...); code != exitcode.OK || strings.Count(out, `"action": "unchanged"`) != 2 {
		t.Errorf("second run: exit %d, want both unchanged:\n%s\n%s", code, out, errOut)
	}
}
