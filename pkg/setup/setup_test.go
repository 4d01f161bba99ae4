package setup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// recorder wraps a node and records the state-changing calls it sends.
type recorder struct {
	Node
	mu    sync.Mutex
	calls []string
}

func (r *recorder) record(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name)
}

func (r *recorder) SetRDP(ctx context.Context, enable bool) (ops.RDPState, error) {
	r.record(ops.RDPSet.Name)
	return r.Node.SetRDP(ctx, enable)
}

func (r *recorder) InstallChoco(ctx context.Context) (ops.ChocoState, error) {
	r.record(ops.ChocoInstall.Name)
	return r.Node.InstallChoco(ctx)
}

func (r *recorder) InstallPackages(ctx context.Context, packages []string) ([]ops.ChocoPackageResult, error) {
	r.record(ops.ChocoPackages.Name + " " + strings.Join(packages, ","))
	return r.Node.InstallPackages(ctx, packages)
}

func (r *recorder) AddAuthorizedKeys(ctx context.Context, keys []string) (ops.AuthorizedKeysState, error) {
	r.record(ops.AuthorizedKeysAdd.Name)
	return r.Node.AddAuthorizedKeys(ctx, keys)
}

// run connects to ts as user and runs setup with desired.
func run(t *testing.T, ts *simnode.TestServer, user string, d Desired, opts Options) (*Report, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	spec := v1alpha1.Node{}
	spec.Name = "winworker"
	spec.Spec.Credentials = ts.CredentialsFor(user)
	n, err := node.Connect(ctx, spec, node.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	rec := &recorder{Node: n}
	report, err := Run(ctx, spec.Name, rec, d, opts)
	return report, rec.calls, err
}

func results(r *Report) map[string]Result {
	m := map[string]Result{}
	for _, s := range r.Steps {
		m[s.Name] = s.Result
	}
	return m
}

func step(t *testing.T, r *Report, name string) Step {
	t.Helper()
	for _, s := range r.Steps {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %q in %+v", name, r.Steps)
	return Step{}
}

func TestFreshNodeThenRerun(t *testing.T) {
	ts := simnode.StartTest(t)
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(pub))
	d := Desired{EnableRDP: true, Packages: []string{"vim", "grep"}, AuthorizedKeys: []string{key}}

	report, calls, err := run(t, ts, "Administrator", d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{StepRDP, StepChocolatey, "package vim", "package grep", StepAuthorizedKeys}
	var names []string
	for _, s := range report.Steps {
		names = append(names, s.Name)
		if s.Result != Changed {
			t.Errorf("first run: step %s = %s (%s), want changed", s.Name, s.Result, s.Detail)
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("steps = %v, want %v", names, want)
	}
	wantCalls := []string{"rdp-set", "choco-install", "choco-packages vim,grep", "authorized-keys-add"}
	if !slices.Equal(calls, wantCalls) {
		t.Errorf("calls = %v, want %v", calls, wantCalls)
	}

	st := ts.State()
	if v := st.Registry[strings.ToLower(simnode.KeyTerminalServer)].Values["fdenytsconnections"].Number; v != 0 {
		t.Errorf("fDenyTSConnections = %d, want 0", v)
	}
	for _, name := range ops.RDPFirewallRules {
		if r := st.Firewall[strings.ToLower(name)]; r == nil || !r.Enabled {
			t.Errorf("firewall rule %s = %+v, want enabled", name, r)
		}
	}
	if !st.Chocolatey.Installed || st.Chocolatey.Packages["vim"] == "" || st.Chocolatey.Packages["grep"] == "" {
		t.Errorf("chocolatey = %+v", st.Chocolatey)
	}
	raw, err := ts.Node().ReadFile(simnode.PathAdminAuthorizedKeys)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), key); n != 1 {
		t.Errorf("key present %d times in %q, want once", n, raw)
	}
	if acl, _ := ts.Node().ACL(simnode.PathAdminAuthorizedKeys); !simnode.AdminOnlyACL(acl) {
		t.Errorf("ACL = %+v", acl)
	}

	report, calls, err = run(t, ts, "Administrator", d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range report.Steps {
		if s.Result != Unchanged {
			t.Errorf("second run: step %s = %s (%s), want unchanged", s.Name, s.Result, s.Detail)
		}
	}
	if len(calls) != 0 {
		t.Errorf("second run sent state-changing ops: %v", calls)
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	ts := simnode.StartTest(t)
	before := ts.State()
	var planned *Report
	report, calls, err := run(t, ts, "Administrator", Desired{EnableRDP: true, Packages: []string{"vim"}},
		Options{DryRun: true, Observer: observerFunc(func(r *Report) { planned = r })})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 0 {
		t.Errorf("dry run sent %v", calls)
	}
	if planned != report || !report.DryRun {
		t.Error("the observer did not get the plan")
	}
	want := map[string]Result{StepRDP: WouldChange, StepChocolatey: WouldChange, "package vim": WouldChange}
	if got := results(report); !mapsEqual(got, want) {
		t.Errorf("plan = %v, want %v", got, want)
	}
	if after := ts.State(); after.Chocolatey.Installed != before.Chocolatey.Installed {
		t.Error("dry run installed Chocolatey")
	}
}

// TestConstrainedLanguageNode: on a node under WDAC or AppLocker every
// step runs but Chocolatey's install, which the plan warns about and which
// fails with the node's constrained-language explanation (not a raw script
// error); its packages wait for it.
func TestConstrainedLanguageNode(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.LanguageMode = simnode.LanguageConstrained }))
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	d := Desired{EnableRDP: true, Packages: []string{"vim"}, AuthorizedKeys: []string{strings.TrimSpace(string(pub))}}
	report, _, err := run(t, ts, "Administrator", d, Options{DryRun: true})
	if err != nil {
		t.Fatalf("plan on a constrained node: %v", err)
	}
	if s := step(t, report, StepChocolatey); s.Result != WouldChange || !strings.Contains(s.Detail, "ConstrainedLanguage mode on the node") {
		t.Errorf("planned chocolatey step = %+v, want a warning", s)
	}
	report, _, err = run(t, ts, "Administrator", d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Result{StepRDP: Changed, StepChocolatey: Failed, "package vim": Failed, StepAuthorizedKeys: Changed}
	if got := results(report); !mapsEqual(got, want) {
		t.Errorf("steps = %+v, want %v", report.Steps, want)
	}
	if s := step(t, report, StepChocolatey); !strings.Contains(s.Detail, "WDAC") || !strings.Contains(s.Detail, "run swdt setup again") {
		t.Errorf("chocolatey step = %+v, want the constrained-language explanation", s)
	}
	for _, name := range ops.RDPFirewallRules {
		if r := ts.State().Firewall[strings.ToLower(name)]; r == nil || !r.Enabled {
			t.Errorf("firewall rule %s = %+v, want enabled", name, r)
		}
	}
}

type observerFunc func(r *Report)

func (f observerFunc) Planned(r *Report)     { f(r) }
func (f observerFunc) StepDone(string, Step) {}

func mapsEqual(a, b map[string]Result) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name       string
		faults     simnode.Faults
		prepare    func(t *testing.T, n *simnode.Node)
		desired    Desired
		want       map[string]Result
		wantDetail map[string][]string
		wantCalls  []string
	}{
		{
			name:    "chocolatey download fails",
			faults:  simnode.Faults{ChocoDownloadFails: true},
			desired: Desired{EnableRDP: true, Packages: []string{"vim"}},
			want:    map[string]Result{StepRDP: Changed, StepChocolatey: Failed, "package vim": Failed},
			wantDetail: map[string][]string{
				StepChocolatey: {"could not download", "The remote name could not be resolved", "internet access"},
				"package vim":  {"Chocolatey is missing"},
			},
			wantCalls: []string{"rdp-set", "choco-install"},
		},
		{
			name:    "unknown package, others installed",
			desired: Desired{EnableRDP: true, Packages: []string{"vim", "no-such-package", "dotnetfx"}},
			want: map[string]Result{StepRDP: Changed, StepChocolatey: Changed, "package vim": Changed,
				"package no-such-package": Failed, "package dotnetfx": Changed},
			wantDetail: map[string][]string{
				"package no-such-package": {`"no-such-package" was not found on the Chocolatey feed`, "not found with the source(s) listed"},
				"package dotnetfx":        {"installed 4.8.0.20220524", "reboot required"},
			},
			wantCalls: []string{"rdp-set", "choco-install", "choco-packages vim,no-such-package,dotnetfx"},
		},
		{
			name: "enableRDP false turns it off",
			prepare: func(t *testing.T, n *simnode.Node) {
				if err := n.SetRegistryDWord(simnode.KeyTerminalServer, "fDenyTSConnections", 0); err != nil {
					t.Fatal(err)
				}
				for _, r := range ops.RDPFirewallRules {
					if err := n.SetFirewallRuleEnabled(r, true); err != nil {
						t.Fatal(err)
					}
				}
			},
			desired:    Desired{EnableRDP: false},
			want:       map[string]Result{StepRDP: Changed},
			wantDetail: map[string][]string{StepRDP: {"now off", "firewall rules disabled: RemoteDesktop-UserMode-In-TCP, RemoteDesktop-UserMode-In-UDP"}},
			wantCalls:  []string{"rdp-set"},
		},
		{
			name: "rdp blocked by Group Policy",
			prepare: func(t *testing.T, n *simnode.Node) {
				if err := n.SetRegistryDWord(simnode.KeyRDPPolicy, "fDenyTSConnections", 1); err != nil {
					t.Fatal(err)
				}
			},
			desired:    Desired{EnableRDP: true},
			want:       map[string]Result{StepRDP: Failed},
			wantDetail: map[string][]string{StepRDP: {"blocked by Group Policy", "gpupdate /force"}},
			wantCalls:  []string{"rdp-set"},
		},
		{
			name: "chocolatey needs a reboot on a stock Server 2019",
			prepare: func(t *testing.T, n *simnode.Node) {
				if err := n.SetRegistryDWord(simnode.KeyNetFx4, "Release", simnode.NetFx472Server2019); err != nil {
					t.Fatal(err)
				}
			},
			desired: Desired{EnableRDP: false, Packages: []string{"vim"}},
			want:    map[string]Result{StepRDP: Unchanged, StepChocolatey: Failed, "package vim": Failed},
			wantDetail: map[string][]string{
				StepChocolatey: {"Reboot the node", "run swdt setup again", ".NET Framework 4.8"},
				"package vim":  {"Chocolatey is missing"},
			},
			wantCalls: []string{"choco-install"},
		},
		{
			name: "a missing firewall rule fails the rdp step",
			prepare: func(t *testing.T, n *simnode.Node) {
				if err := n.Update(func(s *simnode.State) error {
					delete(s.Firewall, "remotedesktop-usermode-in-udp")
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			},
			desired:    Desired{EnableRDP: true},
			want:       map[string]Result{StepRDP: Failed},
			wantDetail: map[string][]string{StepRDP: {"RemoteDesktop-UserMode-In-UDP does not exist"}},
			wantCalls:  []string{"rdp-set"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithFaults(tc.faults))
			if tc.prepare != nil {
				tc.prepare(t, ts.Node())
			}
			report, calls, err := run(t, ts, "Administrator", tc.desired, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := results(report); !mapsEqual(got, tc.want) {
				t.Errorf("results = %v, want %v (%+v)", got, tc.want, report.Steps)
			}
			for name, parts := range tc.wantDetail {
				s := step(t, report, name)
				for _, p := range parts {
					if !strings.Contains(s.Detail, p) {
						t.Errorf("step %s detail %q lacks %q", name, s.Detail, p)
					}
				}
			}
			if !slices.Equal(calls, tc.wantCalls) {
				t.Errorf("calls = %v, want %v", calls, tc.wantCalls)
			}
			wantFailed := slices.Contains(mapsValues(tc.want), Failed)
			if report.Failed() != wantFailed {
				t.Errorf("Failed() = %v, want %v", report.Failed(), wantFailed)
			}
		})
	}
}

func mapsValues(m map[string]Result) []Result {
	var out []Result
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestRebootRequired(t *testing.T) {
	ts := simnode.StartTest(t)
	report, _, err := run(t, ts, "Administrator", Desired{EnableRDP: true, Packages: []string{"vcredist140", "vim"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := report.RebootRequired(); !slices.Equal(got, []string{"package vcredist140"}) {
		t.Errorf("RebootRequired() = %v", got)
	}
}

// TestChocolateyRebootThenRerun: on a stock Server 2019 the first run
// reports that the node must reboot (a step with RebootRequired), and the
// run after the reboot completes.
func TestChocolateyRebootThenRerun(t *testing.T) {
	ts := simnode.StartTest(t)
	n := ts.Node()
	if err := n.SetRegistryDWord(simnode.KeyNetFx4, "Release", simnode.NetFx472Server2019); err != nil {
		t.Fatal(err)
	}
	d := Desired{EnableRDP: false, Packages: []string{"vim"}}
	report, _, err := run(t, ts, "Administrator", d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := report.RebootRequired(); !slices.Equal(got, []string{StepChocolatey}) || !report.Failed() {
		t.Errorf("RebootRequired() = %v, Failed() = %v, steps %+v", got, report.Failed(), report.Steps)
	}
	if err := n.Reboot(); err != nil {
		t.Fatal(err)
	}
	report, _, err = run(t, ts, "Administrator", d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Result{StepRDP: Unchanged, StepChocolatey: Changed, "package vim": Changed}
	if got := results(report); !mapsEqual(got, want) || len(report.RebootRequired()) != 0 {
		t.Errorf("after the reboot: %+v", report.Steps)
	}
}

// TestUTF16KeysFileIsRewritten: a file sshd ignores (UTF-16, as Windows
// PowerShell's `>` writes it) is planned for a rewrite even when every key
// is in it, and rewritten as UTF-8 with its keys.
func TestUTF16KeysFileIsRewritten(t *testing.T) {
	ts := simnode.StartTest(t)
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(pub))
	var utf16 []byte
	for _, r := range "\ufeff" + key + "\r\n" {
		utf16 = append(utf16, byte(r), byte(r>>8))
	}
	n := ts.Node()
	if err := n.WriteFile(simnode.PathAdminAuthorizedKeys, utf16); err != nil {
		t.Fatal(err)
	}
	d := Desired{EnableRDP: false, AuthorizedKeys: []string{key}}
	report, _, err := run(t, ts, "Administrator", d, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := step(t, report, StepAuthorizedKeys); s.Result != WouldChange || !strings.Contains(s.Detail, "rewrite the file as UTF-8 (it is utf-16le") {
		t.Errorf("planned step = %+v", s)
	}
	report, _, err = run(t, ts, "Administrator", d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := step(t, report, StepAuthorizedKeys); s.Result != Changed || !strings.Contains(s.Detail, "added 0 keys; rewrote the file as UTF-8") {
		t.Errorf("step = %+v", s)
	}
	if got := n.SSHDAdminKeys(); !slices.Equal(got, []string{key}) {
		t.Errorf("sshd would accept %q, want the key", got)
	}
	report, calls, err := run(t, ts, "Administrator", d, Options{})
	if err != nil || len(calls) != 0 || step(t, report, StepAuthorizedKeys).Result != Unchanged {
		t.Errorf("second run: calls %v, err %v, steps %+v", calls, err, report.Steps)
	}
}

// TestKeysFileOwnedByAnotherAccount: a file a non-administrator created
// (its owner) is planned to be given to Administrators, given, and then
// accepted by sshd; the second run finds nothing to do.
func TestKeysFileOwnedByAnotherAccount(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimSpace(string(pub))
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	if err := mallory.WriteFile(simnode.PathAdminAuthorizedKeys, []byte(key+"\r\n")); err != nil {
		t.Fatal(err)
	}
	d := Desired{EnableRDP: false, AuthorizedKeys: []string{key}}
	report, _, err := run(t, ts, "Administrator", d, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := step(t, report, StepAuthorizedKeys); s.Result != WouldChange || !strings.Contains(s.Detail, "move the file aside unread if an ordinary user created it, else give it to Administrators (it is owned by mallory") {
		t.Errorf("planned step = %+v", s)
	}
	report, _, err = run(t, ts, "Administrator", d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	aside := ops.UntrustedPath(simnode.PathAdminAuthorizedKeys)
	if s := step(t, report, StepAuthorizedKeys); s.Result != Changed || !strings.Contains(s.Detail, "moved the file mallory owned (sshd did not trust it) aside, unread, to "+aside) {
		t.Errorf("step = %+v", s)
	}
	if got := ts.Node().SSHDAdminKeys(); !slices.Equal(got, []string{key}) {
		t.Errorf("sshd would accept %q, want the key", got)
	}
	report, calls, err := run(t, ts, "Administrator", d, Options{})
	if err != nil || len(calls) != 0 || step(t, report, StepAuthorizedKeys).Result != Unchanged {
		t.Errorf("second run: calls %v, err %v, steps %+v", calls, err, report.Steps)
	}
}

func TestNonAdminIsRefused(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "developer"}))
	_, calls, err := run(t, ts, "developer", Desired{EnableRDP: true, Packages: []string{"vim"}}, Options{})
	var na *NotAdminError
	if !errors.As(err, &na) {
		t.Fatalf("err = %v, want *NotAdminError", err)
	}
	for _, want := range []string{`is not an administrator on node winworker`, "spec.credentials.username", "Administrators"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if len(calls) != 0 {
		t.Errorf("sent %v for a non-administrator", calls)
	}
}

func TestKeyUnderAnotherCommentIsNotAddedTwice(t *testing.T) {
	ts := simnode.StartTest(t)
	pub, err := os.ReadFile(ts.PublicKeyFile)
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(pub))
	onNode := fields[0] + " " + fields[1] + " old-comment"
	n := ts.Node()
	if err := n.WriteFile(simnode.PathAdminAuthorizedKeys, []byte(onNode+"\r\n")); err != nil {
		t.Fatal(err)
	}
	report, calls, err := run(t, ts, "Administrator", Desired{EnableRDP: false, AuthorizedKeys: []string{strings.TrimSpace(string(pub))}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Only the ACL needs fixing; nothing is appended.
	s := step(t, report, StepAuthorizedKeys)
	if s.Result != Changed || !strings.Contains(s.Detail, "added 0 keys; restricted") {
		t.Errorf("step = %+v", s)
	}
	if !slices.Equal(calls, []string{"authorized-keys-add"}) {
		t.Errorf("calls = %v", calls)
	}
	raw, _ := n.ReadFile(simnode.PathAdminAuthorizedKeys)
	if string(raw) != onNode+"\r\n" {
		t.Errorf("file = %q", raw)
	}
}

func TestDesiredFrom(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const keyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl a@laptop"
	good := write("a.pub", "# my key\n"+keyA+"\n\n")
	dup := write("dup.pub", keyA+"\n")
	bad := write("bad.pub", keyA+"\nnot a key\n")
	priv := write("id_ed25519", "-----BEGIN OPENSSH PRIVATE KEY-----\nxxx\n-----END OPENSSH PRIVATE KEY-----\n")
	empty := write("empty.pub", "# nothing\n")
	off := false

	tests := []struct {
		name     string
		spec     v1alpha1.SetupSpec
		want     Desired
		wantErrs []string
	}{
		{name: "defaults", want: Desired{EnableRDP: true}},
		{name: "rdp off and packages", spec: v1alpha1.SetupSpec{EnableRDP: &off, ChocoPackages: []string{"vim"}},
			want: Desired{Packages: []string{"vim"}}},
		{name: "keys deduplicated", spec: v1alpha1.SetupSpec{AuthorizedKeys: []string{good, dup}},
			want: Desired{EnableRDP: true, AuthorizedKeys: []string{keyA}}},
		{name: "bad line", spec: v1alpha1.SetupSpec{AuthorizedKeys: []string{good, bad}},
			wantErrs: []string{"spec.setup.authorizedKeys[1]", bad + " line 2 is not an OpenSSH public key"}},
		{name: "private key", spec: v1alpha1.SetupSpec{AuthorizedKeys: []string{priv}},
			wantErrs: []string{"is a private key", ".pub"}},
		{name: "no key", spec: v1alpha1.SetupSpec{AuthorizedKeys: []string{empty}}, wantErrs: []string{"holds no public key"}},
		{name: "missing file", spec: v1alpha1.SetupSpec{AuthorizedKeys: []string{filepath.Join(dir, "nope.pub")}},
			wantErrs: []string{"read public key file", "nope.pub"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DesiredFrom(tc.spec)
			if len(tc.wantErrs) > 0 {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range tc.wantErrs {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.EnableRDP != tc.want.EnableRDP || !slices.Equal(got.Packages, tc.want.Packages) || !slices.Equal(got.AuthorizedKeys, tc.want.AuthorizedKeys) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDescribeRDP(t *testing.T) {
	rules := func(enabled bool) []ops.FirewallRule {
		return []ops.FirewallRule{{Name: "RemoteDesktop-UserMode-In-TCP", Exists: true, Enabled: enabled}}
	}
	tests := []struct {
		name string
		st   ops.RDPState
		want string
	}{
		{name: "on", st: ops.RDPState{Enabled: true, FirewallRules: rules(true)}, want: "on; firewall rules enabled: RemoteDesktop-UserMode-In-TCP"},
		{name: "off", st: ops.RDPState{FirewallRules: rules(false)}, want: "off; firewall rules disabled: RemoteDesktop-UserMode-In-TCP"},
		{name: "blocked by Group Policy", st: ops.RDPState{BlockedByPolicy: true, FirewallRules: rules(true)},
			want: "off (blocked by Group Policy); firewall rules enabled: RemoteDesktop-UserMode-In-TCP"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := describeRDP(tc.st); got != tc.want {
				t.Errorf("describeRDP = %q, want %q", got, tc.want)
			}
		})
	}
}
