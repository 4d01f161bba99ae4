package app

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// A provisioner that registers its own service (csi-proxy, which no
// installer set up) takes the same swap path as any other: no workflow of
// its own, only a register section in the node file.
func TestKubernetesProvisionerRegistersItsService(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("csi-proxy", "MZ csi-proxy v1\n")
	const dest = `C:\k\csi-proxy.exe`
	fx.writeSpec(fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: csi-proxy
      sourceURL: ./csi-proxy.exe
      destination: '%s'
      register:
        args: ["-windows-service", "-log_file=C:\\k\\csi-proxy.log", "-v", "4"]
        displayName: CSI Proxy
        startType: Automatic
`, dest))

	code, doc, errOut := fx.runJSON()
	if code != exitcode.OK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	got := actions(doc)["csi-proxy"]
	if got.Result != report.Changed || !got.Registered {
		t.Fatalf("csi-proxy = %+v, want changed and registered\n%s", got, errOut)
	}
	svc := fx.ts.State().Services["csi-proxy"]
	if svc == nil {
		t.Fatal("no csi-proxy service on the node")
	}
	if svc.Status != "Running" || svc.StartType != "Automatic" || svc.DisplayName != "CSI Proxy" || svc.BinaryPath != dest ||
		!slices.Equal(svc.Args, []string{"-windows-service", `-log_file=C:\k\csi-proxy.log`, "-v", "4"}) {
		t.Errorf("service = %+v", svc)
	}
	if fx.content(dest) != "MZ csi-proxy v1\n" {
		t.Errorf("%s holds %q", dest, fx.content(dest))
	}
	fx.assertNoStaged(dest)

	// Registered now: the next run leaves it alone, the one after a
	// rebuild swaps it like any service.
	starts := svc.StartCount
	code, doc, errOut = fx.runJSON()
	if got := actions(doc)["csi-proxy"]; code != exitcode.OK || got.Action != "unchanged" || got.Registered {
		t.Fatalf("second run: exit %d, %+v\n%s", code, got, errOut)
	}
	if fx.ts.State().Services["csi-proxy"].StartCount != starts {
		t.Error("the second run restarted csi-proxy")
	}
	fx.writeSource("csi-proxy", "MZ csi-proxy v2\n")
	code, doc, errOut = fx.runJSON()
	if got := actions(doc)["csi-proxy"]; code != exitcode.OK || got.Action != "updated" || got.Registered {
		t.Fatalf("rebuild: exit %d, %+v\n%s", code, got, errOut)
	}
	if fx.content(dest) != "MZ csi-proxy v2\n" {
		t.Errorf("%s holds %q after the rebuild", dest, fx.content(dest))
	}
}

// register keeps an existing service in line: an edit of its args, start
// type, display name or dependencies shows in the plan and a run applies
// it and restarts the service, without sending the binary again.
func TestKubernetesRegisterKeepsTheServiceInLine(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("csi-proxy", "MZ csi-proxy v1\n")
	const dest = `C:\k\csi-proxy.exe`
	spec := func(args, display, start, deps string) string {
		return fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: csi-proxy
      sourceURL: ./csi-proxy.exe
      destination: '%s'
      register:
        args: %s
        displayName: %s
        startType: %s
        dependsOn: %s
`, dest, args, display, start, deps)
	}
	fx.writeSpec(spec(`["-windows-service", "-v", "2", "C:\\dir with space\\"]`, "CSI Proxy", "Automatic", "[]"))
	if code, _, errOut := fx.runJSON(); code != exitcode.OK {
		t.Fatalf("first run: exit %d\n%s", code, errOut)
	}
	code, doc, errOut := fx.runJSON()
	if got := actions(doc)["csi-proxy"]; code != exitcode.OK || got.Action != "unchanged" || len(got.Drift) > 0 {
		t.Fatalf("a run without an edit: exit %d, %+v\n%s", code, got, errOut)
	}
	starts := fx.ts.State().Services["csi-proxy"].StartCount

	fx.writeSpec(spec(`["-windows-service", "-v", "4"]`, "CSI Proxy 2", "Manual", "[kubelet]"))
	code, out, errOut := fx.run(context.Background(), "--dry-run")
	for _, want := range []string{"would-change", `args: [-windows-service -v 2 "C:\dir with space\"] -> [-windows-service -v 4]`,
		"startType: Automatic -> Manual", `displayName: "CSI Proxy" -> "CSI Proxy 2"`, "dependsOn: [] -> [kubelet]"} {
		if !strings.Contains(out+errOut, want) {
			t.Errorf("dry run lacks %q:\n%s\n%s", want, out, errOut)
		}
	}
	if code != exitcode.OK || fx.ts.State().Services["csi-proxy"].StartCount != starts {
		t.Fatalf("dry run: exit %d or it restarted the service\n%s", code, errOut)
	}

	code, doc, errOut = fx.runJSON()
	got := actions(doc)["csi-proxy"]
	if code != exitcode.OK || got.Action != "reconfigured" || got.Result != report.Changed || !got.Reconfigured || got.BytesSent != 0 {
		t.Fatalf("run: exit %d, %+v\n%s", code, got, errOut)
	}
	svc := fx.ts.State().Services["csi-proxy"]
	if !slices.Equal(svc.Args, []string{"-windows-service", "-v", "4"}) || svc.StartType != "Manual" || svc.DisplayName != "CSI Proxy 2" ||
		!slices.Equal(svc.Dependencies, []string{"kubelet"}) || svc.BinaryPath != dest {
		t.Errorf("service after the run = %+v", svc)
	}
	if svc.StartCount != starts+1 || svc.Status != "Running" {
		t.Errorf("the service was not restarted once: %d starts after %d, %s", svc.StartCount, starts, svc.Status)
	}
	code, doc, errOut = fx.runJSON()
	if got := actions(doc)["csi-proxy"]; code != exitcode.OK || got.Action != "unchanged" {
		t.Errorf("the run after: exit %d, %+v\n%s", code, got, errOut)
	}

	// A rebuild and an edit together: the service is configured before
	// the swap, whose one restart starts the new binary with the new args.
	starts = fx.ts.State().Services["csi-proxy"].StartCount
	fx.writeSource("csi-proxy", "MZ csi-proxy v2\n")
	fx.writeSpec(spec(`["-windows-service", "-v", "5"]`, "CSI Proxy 2", "Manual", "[kubelet]"))
	code, doc, errOut = fx.runJSON()
	if got := actions(doc)["csi-proxy"]; code != exitcode.OK || got.Action != "updated" || !got.Reconfigured {
		t.Fatalf("rebuild and edit: exit %d, %+v\n%s", code, got, errOut)
	}
	svc = fx.ts.State().Services["csi-proxy"]
	if !slices.Equal(svc.Args, []string{"-windows-service", "-v", "5"}) || svc.StartCount != starts+1 || fx.content(dest) != "MZ csi-proxy v2\n" {
		t.Errorf("after the rebuild and edit: args %q, %d starts after %d, %q", svc.Args, svc.StartCount, starts, fx.content(dest))
	}
}

// A service that does not come up with its new configuration (a flag the
// program rejects) gets its previous one back and runs again, whether
// only the configuration changed or the binary too (then rolled back).
func TestKubernetesRegisterPutsTheConfigurationBack(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("csi-proxy", "MZ csi-proxy v1\n")
	const dest = `C:\k\csi-proxy.exe`
	spec := func(args string) string {
		return fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: csi-proxy
      sourceURL: ./csi-proxy.exe
      destination: '%s'
      register:
        args: %s
`, dest, args)
	}
	fx.writeSpec(spec(`["-v", "2"]`))
	if code, _, errOut := fx.runJSON(); code != exitcode.OK {
		t.Fatalf("first run: exit %d\n%s", code, errOut)
	}
	for _, tt := range []struct {
		name    string
		rebuild bool
	}{{"configuration only", false}, {"with a rebuild", true}} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.rebuild {
				fx.writeSource("csi-proxy", "MZ csi-proxy v2\n")
			}
			fx.writeSpec(spec(`["-v", "4", "` + simnode.MarkerCrashOnStart + `"]`))
			code, doc, errOut := fx.runJSON()
			got := actions(doc)["csi-proxy"]
			if code != exitcode.Failure || got.Result == report.Changed || !strings.Contains(got.Error, "its previous configuration was put back and it runs again") ||
				!tt.rebuild && got.Action != "rolled-back" {
				t.Fatalf("exit %d, %+v\n%s", code, got, errOut)
			}
			svc := fx.ts.State().Services["csi-proxy"]
			if !slices.Equal(svc.Args, []string{"-v", "2"}) || svc.Status != "Running" || fx.content(dest) != "MZ csi-proxy v1\n" {
				t.Errorf("service %+v, binary %q: want the old args and binary, Running", svc, fx.content(dest))
			}
			fx.writeSource("csi-proxy", "MZ csi-proxy v1\n")
		})
	}
}

// Without a register section, a missing service still fails the
// provisioner, says to add register: and, as nothing was changed, exits 1
// (not 3, which says that something was).
func TestKubernetesMissingServiceWithoutRegister(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("csi-proxy", "MZ csi-proxy v1\n")
	fx.writeSpec(`  kubernetes:
    provisioners:
    - name: csi-proxy
      sourceURL: ./csi-proxy.exe
      destination: 'C:\k\csi-proxy.exe'
`)
	code, _, errOut := fx.run(context.Background())
	if code != exitcode.Failure || !strings.Contains(errOut, `service "csi-proxy" is not registered`) ||
		!strings.Contains(errOut, "add register: (args, startType) to provisioner csi-proxy in the node file") || strings.Contains(errOut, "New-Service") {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}

// A provisioner with service None is a plain file push (a CNI plugin):
// staged, verified and renamed into place, with no service stopped or
// started; status says it feeds no service.
func TestKubernetesPlainFilePush(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("win-overlay", "MZ win-overlay v1\n")
	const dest = `C:\k\cni\bin\win-overlay.exe`
	fx.writeSpec(fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: win-overlay
      service: None
      sourceURL: ./win-overlay.exe
      destination: '%s'
`, dest))
	before := fx.ts.State()
	for i, want := range []struct{ action, content string }{{"updated", "MZ win-overlay v1\n"}, {"unchanged", "MZ win-overlay v1\n"}, {"updated", "MZ win-overlay v2\n"}} {
		if i == 2 {
			fx.writeSource("win-overlay", "MZ win-overlay v2\n")
		}
		code, doc, errOut := fx.runJSON()
		got := actions(doc)["win-overlay"]
		if code != exitcode.OK || got.Action != want.action || got.DowntimeMs != 0 {
			t.Fatalf("run %d: exit %d, %+v, want %s\n%s", i+1, code, got, want.action, errOut)
		}
		if c := fx.content(dest); c != want.content {
			t.Fatalf("run %d: %s holds %q", i+1, dest, c)
		}
		fx.assertNoStaged(dest)
	}
	after := fx.ts.State()
	for name, svc := range before.Services {
		if after.Services[name].StartCount != svc.StartCount {
			t.Errorf("service %s was restarted by a plain file push", name)
		}
	}
	var out, errb strings.Builder
	code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		[]string{"status", "-c", fx.config, "--cache-dir", fx.cache, "--no-color"})
	if code != exitcode.OK || !strings.Contains(out.String(), "no-service") || !strings.Contains(out.String(), "in-sync") {
		t.Errorf("status: exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// A service swdt registers has its health checks run on its first start:
// one that fails is reported, not taken for a working service (exit 1:
// the run's only provisioner failed).
func TestKubernetesRegisteredServiceIsHealthChecked(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("csi-proxy", "MZ csi-proxy v1\n")
	fx.writeSpec(`  kubernetes:
    provisioners:
    - name: csi-proxy
      sourceURL: ./csi-proxy.exe
      destination: 'C:\k\csi-proxy.exe'
      register: {}
      healthCheck:
      - namedPipe: csi-proxy-filesystem-v1
`)
	code, doc, errOut := fx.runJSON()
	got := actions(doc)["csi-proxy"]
	if code != exitcode.Failure || got.Result != report.Failed || !got.Registered || !strings.Contains(got.Error, "health check failed") ||
		!strings.Contains(got.Error, "csi-proxy-filesystem-v1") {
		t.Fatalf("exit %d, %+v\n%s", code, got, errOut)
	}
}

// writeSpec writes the fixture's node file with spec (YAML below the
// node's spec, indented two spaces) after the credentials.
func (fx *kubeFixture) writeSpec(spec string) {
	fx.t.Helper()
	if err := os.WriteFile(fx.config, []byte(nodeHeader("sim", fx.ts.Credentials())+spec), 0o600); err != nil {
		fx.t.Fatal(err)
	}
}

// register's args and dependsOn are the whole lists: an edit that would
// take away a flag the running service has (--windows-service above all)
// or a dependency is refused, in the dry run and the run alike, naming
// what it would drop, and the service is left as it is; register.replace
// says the user means it. Changing a flag's value drops nothing.
func TestKubernetesRegisterNeverDropsFlagsSilently(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	fx.writeSource("csi-proxy", "MZ csi-proxy v1\n")
	const dest = `C:\k\csi-proxy.exe`
	spec := func(args, deps, replace string) string {
		return fmt.Sprintf(`  kubernetes:
    provisioners:
    - name: csi-proxy
      sourceURL: ./csi-proxy.exe
      destination: '%s'
      register:
        args: %s
        dependsOn: %s
        replace: %s
`, dest, args, deps, replace)
	}
	fx.writeSpec(spec(`["--windows-service", "--config=C:\\k\\csi.yaml", "--v=2"]`, "[kubelet]", "false"))
	if code, _, errOut := fx.runJSON(); code != exitcode.OK {
		t.Fatalf("first run: exit %d\n%s", code, errOut)
	}
	starts := fx.ts.State().Services["csi-proxy"].StartCount

	// The edit of the issue: a log file and a verbosity instead of the
	// flags the service needs.
	fx.writeSpec(spec(`["--log-file=C:\\k\\csi.log", "--v=4"]`, "[]", "false"))
	for _, dry := range []bool{true, false} {
		var args []string
		if dry {
			args = []string{"--dry-run"}
		}
		code, out, errOut := fx.run(context.Background(), args...)
		for _, want := range []string{"flag --windows-service", `flag --config=C:\k\csi.yaml`, "dependency kubelet", "register.replace: true"} {
			if !strings.Contains(out+errOut, want) {
				t.Errorf("dry run %v: no %q in\n%s\n%s", dry, want, out, errOut)
			}
		}
		if strings.Contains(out+errOut, "flag --v=2") {
			t.Errorf("dry run %v: --v=2 to --v=4 counted as dropped:\n%s", dry, errOut)
		}
		if !dry && code == exitcode.OK {
			t.Errorf("the refused edit exited 0\n%s", errOut)
		}
	}
	svc := fx.ts.State().Services["csi-proxy"]
	if !slices.Equal(svc.Args, []string{"--windows-service", `--config=C:\k\csi.yaml`, "--v=2"}) || !slices.Equal(svc.Dependencies, []string{"kubelet"}) || svc.StartCount != starts {
		t.Fatalf("the refused edit changed the service: %+v", svc)
	}

	// Keeping them, a value may change and flags may be added.
	fx.writeSpec(spec(`["--windows-service", "--config=C:\\k\\csi.yaml", "--v=4", "--log-file=C:\\k\\csi.log"]`, "[kubelet]", "false"))
	if code, doc, errOut := fx.runJSON(); code != exitcode.OK || actions(doc)["csi-proxy"].Action != "reconfigured" {
		t.Fatalf("an edit that keeps the flags: exit %d, %+v\n%s", code, actions(doc)["csi-proxy"], errOut)
	}
	// register.replace: the user means it.
	fx.writeSpec(spec(`["--v=4"]`, "[]", "true"))
	if code, doc, errOut := fx.runJSON(); code != exitcode.OK || actions(doc)["csi-proxy"].Action != "reconfigured" {
		t.Fatalf("replace: exit %d, %+v\n%s", code, actions(doc)["csi-proxy"], errOut)
	}
	if svc := fx.ts.State().Services["csi-proxy"]; !slices.Equal(svc.Args, []string{"--v=4"}) || len(svc.Dependencies) != 0 {
		t.Errorf("after replace: %+v", svc)
	}
}
