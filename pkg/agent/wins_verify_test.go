package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
	"sigs.k8s.io/swdt/pkg/wins"
)

var testWinsPaths = wins.Paths{Binary: testWins, Config: testWinsConfig, Smoke: testWinsSmoke}

func TestWinsVerify(t *testing.T) {
	const hungClient = `C:\etc\rancher\wins\wins-client.exe`
	tests := []struct {
		name     string
		binary   string
		client   string // a separate wins binary run as the client when set
		start    bool
		config   string // replaces the whitelist when set
		pipes    bool
		getVer   string // substring of GetVersionError; "" means it must work
		deepOK   bool
		deepWhy  string
		noDeep   bool
		wantSvc  string
		noBinary bool
		missing  []string // Win32 calls the node lacks (simnode.Faults.MissingAPIs)
	}{
		{name: "bridge works", binary: "MZ wins v0.15.1", start: true, pipes: true, deepOK: true, wantSvc: "Running"},
		{name: "pipes that cannot be listed are probed by name", binary: "MZ wins v0.15.1", start: true, pipes: true, deepOK: true, wantSvc: "Running",
			missing: []string{simnode.MissingAPIPipeListing, simnode.MissingAPIFailureActions}},
		{name: "v0.16 has no pipes", binary: "MZ wins v0.16.0 " + simnode.MarkerWinsNoPipe, start: true, getVer: `\\.\pipe\rancher_wins`, deepWhy: "exited 1", wantSvc: "Running"},
		{name: "service stopped", binary: "MZ wins v0.15.1", getVer: "exited 1", deepWhy: "exited 1", wantSvc: "Stopped"},
		{name: "not whitelisted", binary: "MZ wins v0.15.1", start: true, pipes: true, config: "white_list: {processPaths: []}\n", deepWhy: "exited 1", wantSvc: "Running"},
		{name: "no binary", binary: "MZ wins v0.15.1", noBinary: true, getVer: "does not exist", noDeep: true, wantSvc: ""},
		{name: "hung wins.exe", binary: "MZ wins v0.15.1", client: "MZ wins " + simnode.MarkerWinsHang, start: true, pipes: true,
			getVer: "wins-client.exe cli hst get-version did not finish within", deepWhy: "wins-client.exe cli prc run --path " + testWinsSmoke + " did not finish within", wantSvc: "Running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, w := startWinsTest(t)
			n := ts.Node()
			if !tt.noBinary {
				installWins(t, ts, tt.binary, tt.start)
			}
			if err := ts.UpdateFaults(func(f *simnode.Faults) { f.MissingAPIs = tt.missing }); err != nil {
				t.Fatal(err)
			}
			if tt.config != "" {
				if err := n.WriteFile(testWinsConfig, []byte(tt.config)); err != nil {
					t.Fatal(err)
				}
			}
			binary := testWins
			if tt.client != "" {
				binary = hungClient
				if err := n.WriteFile(binary, []byte(tt.client)); err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			resp, err := agent.Call(context.Background(), w, ops.WinsVerify, ops.WinsVerifyRequest{Binary: binary, Deep: !tt.noDeep, SmokePath: testWinsSmoke})
			if err != nil {
				t.Fatal(err)
			}
			// Two wins.exe calls at most, each bounded, plus the cleanup:
			// the bound catches a call left unbounded, not slowness.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("verify took %s", d)
			}
			if resp.Service.Status != tt.wantSvc || resp.Service.Exists == tt.noBinary {
				t.Errorf("service %+v", resp.Service)
			}
			if resp.Pipes[ops.WinsPipe] != tt.pipes || resp.Pipes[ops.WinsProxyPipe] != tt.pipes {
				t.Errorf("pipes %v", resp.Pipes)
			}
			if tt.getVer == "" {
				for _, k := range ops.WinsVersionKeys {
					if fmt.Sprint(resp.GetVersion[k]) != fmt.Sprint(resp.Registry[k]) || resp.Registry[k] == nil {
						t.Errorf("%s: get-version %v, registry %v", k, resp.GetVersion[k], resp.Registry[k])
					}
				}
				if resp.GetVersionError != "" {
					t.Errorf("get-version error %q", resp.GetVersionError)
				}
			} else if !strings.Contains(resp.GetVersionError, tt.getVer) {
				t.Errorf("get-version error %q, want %q", resp.GetVersionError, tt.getVer)
			}
			if tt.noDeep {
				if resp.Deep != nil {
					t.Errorf("deep ran: %+v", resp.Deep)
				}
				return
			}
			d := resp.Deep
			if d == nil || d.OK != tt.deepOK || !strings.Contains(d.Error, tt.deepWhy) || len(d.Leftovers) != 0 {
				t.Fatalf("deep %+v", d)
			}
			if tt.deepOK && d.Output != n.Hostname() {
				t.Errorf("deep output %q", d.Output)
			}
			for _, f := range []string{testWinsSmoke, testWinsRenamed} {
				if n.Exists(f) {
					t.Errorf("%s left behind", f)
				}
			}
			if o := winsProcesses(t, ts); len(o) != 0 {
				t.Errorf("orphans left: %+v", o)
			}
			checks := wins.Checks(resp, testWinsPaths, true)
			if ok := checks[2].OK && checks[3].OK; ok != (tt.getVer == "" && tt.deepOK) {
				t.Errorf("checks %+v", checks)
			}
		})
	}
}

// The deep check compares with the DNS host name as configured, which
// hostname.exe prints, and ignores case: a lower-case name longer than 15
// characters differs from the NetBIOS name ([Environment]::MachineName:
// upper case, cut to 15) that the old script compared with.
func TestWinsVerifyDeepLongLowerCaseHostname(t *testing.T) {
	const host = "swdt-worker-node-0042"
	tests := []struct {
		name    string
		printed string // what the host process prints; "" means simnode's hostname.exe
	}{
		{name: "as configured"},
		{name: "other case", printed: strings.ToUpper(host) + "\r\n"},
		{name: "log line before", printed: "starting\r\n  " + host + "  \r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, sim := startWinsTest(t)
			if err := ts.Node().Update(func(s *simnode.State) error { s.Hostname = host; return nil }); err != nil {
				t.Fatal(err)
			}
			installWins(t, ts, "MZ wins v0.15.1", true)
			w := sim
			if tc.printed != "" {
				w = wrappedOS{OS: sim, run: func(cmd winos.Command) (winos.Result, bool) {
					if !isWins(cmd, "cli", "prc", "run") {
						return winos.Result{}, false
					}
					// wins still renames and starts the copy.
					if _, err := sim.Run(context.Background(), cmd); err != nil {
						t.Error(err)
					}
					return winos.Result{Stdout: []byte(tc.printed)}, true
				}}
			}
			resp, err := agent.Call(context.Background(), w, ops.WinsVerify, ops.WinsVerifyRequest{Binary: testWins, Deep: true, SmokePath: testWinsSmoke})
			if err != nil {
				t.Fatal(err)
			}
			if d := resp.Deep; d == nil || !d.OK || d.Expected != host || d.Error != "" || len(d.Leftovers) != 0 {
				t.Errorf("deep %+v", d)
			}
			if ts.Node().Exists(testWinsSmoke) || ts.Node().Exists(testWinsRenamed) || len(winsProcesses(t, ts)) != 0 {
				t.Error("smoke copy or its process left behind")
			}
		})
	}
}

// What wins printed is reported as it is, for swdt to compare with the
// host registry: a get-version that disagrees with the registry fails the
// check, numbers printed as strings (protobuf's 64-bit integers) do not,
// and log lines on stderr do not spoil the JSON.
func TestWinsVerifyGetVersionOutput(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(v map[string]any)
		stdout  string // replaces the JSON when set
		stderr  string
		wantErr string // substring of GetVersionError
		checkOK bool
		detail  string
	}{
		{name: "matches", stderr: `time="2024-01-01T00:00:00Z" level=info msg="dialing"`, checkOK: true},
		{name: "numbers as strings", edit: func(v map[string]any) { v["UBR"] = fmt.Sprint(v["UBR"]) }, checkOK: true},
		{name: "mismatch", edit: func(v map[string]any) { v["UBR"] = 1 }, detail: "UBR: wins says \"1\""},
		{name: "key missing", edit: func(v map[string]any) { delete(v, "BuildLabEx") }, detail: "BuildLabEx"},
		{name: "not JSON", stdout: "Incorrect Usage.", wantErr: "printed no JSON: Incorrect Usage."},
		{name: "nothing", stdout: " ", wantErr: "printed no JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts, sim := startWinsTest(t)
			installWins(t, ts, "MZ wins v0.15.1", true)
			w := wrappedOS{OS: sim, run: func(cmd winos.Command) (winos.Result, bool) {
				if !isWins(cmd, "cli", "hst", "get-version") {
					return winos.Result{}, false
				}
				res, err := sim.Run(context.Background(), cmd)
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("get-version: %+v %v", res, err)
				}
				out := tc.stdout
				if out == "" {
					var v map[string]any
					if err := json.Unmarshal(res.Stdout, &v); err != nil {
						t.Fatal(err)
					}
					if tc.edit != nil {
						tc.edit(v)
					}
					raw, _ := json.Marshal(v)
					out = string(raw) + "\r\n"
				}
				return winos.Result{Stdout: []byte(out), Stderr: []byte(tc.stderr)}, true
			}}
			resp, err := agent.Call(context.Background(), w, ops.WinsVerify, ops.WinsVerifyRequest{Binary: testWins})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if !strings.Contains(resp.GetVersionError, tc.wantErr) || len(resp.GetVersion) != 0 {
					t.Errorf("get-version %v, error %q; want %q", resp.GetVersion, resp.GetVersionError, tc.wantErr)
				}
				return
			}
			if resp.GetVersionError != "" {
				t.Fatalf("get-version error %q", resp.GetVersionError)
			}
			c := wins.Checks(resp, testWinsPaths, false)[2]
			if c.OK != tc.checkOK || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("check %+v", c)
			}
		})
	}
}

// The deep check cleans up after its own smoke process only: other
// rancher-wins-* processes are workloads wins runs for containers and
// must survive a verification.
func TestWinsVerifyDeepLeavesOtherWinsProcesses(t *testing.T) {
	ts, w := startWinsTest(t)
	n := ts.Node()
	installWins(t, ts, "MZ wins v0.15.1", true)
	const workload = `C:\etc\rancher\wins\rancher-wins-kube-proxy.exe`
	if err := n.WriteFile(workload, []byte("MZ kube-proxy")); err != nil {
		t.Fatal(err)
	}
	pid, err := n.StartProcess(workload, "")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := agent.Call(context.Background(), w, ops.WinsVerify, ops.WinsVerifyRequest{Binary: testWins, Deep: true, SmokePath: testWinsSmoke})
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.Deep; d == nil || !d.OK || len(d.Leftovers) != 0 {
		t.Fatalf("deep %+v", d)
	}
	if o := winsProcesses(t, ts); len(o) != 1 || o[0].PID != pid {
		t.Errorf("rancher-wins-* processes after verify: %+v, want only the workload %d", o, pid)
	}
	if n.Exists(testWinsRenamed) || n.Exists(testWinsSmoke) {
		t.Error("smoke files left behind")
	}
}

// A verification cut short by the op's own deadline fails as a timeout
// instead of reporting wins as broken.
func TestWinsVerifyOpDeadline(t *testing.T) {
	ts, w := startWinsTest(t)
	installWins(t, ts, "MZ wins v0.15.1", true)
	const hung = `C:\etc\rancher\wins\wins-client.exe`
	if err := ts.Node().WriteFile(hung, []byte("MZ wins "+simnode.MarkerWinsHang)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := agent.Call(ctx, w, ops.WinsVerify, ops.WinsVerifyRequest{Binary: hung, Deep: true, SmokePath: testWinsSmoke})
	if kind, _ := failure(t, err); kind != "timeout" {
		t.Errorf("verify past its deadline: %v", err)
	}
	if ts.Node().Exists(testWinsSmoke) {
		t.Error("smoke copy left behind")
	}
}
