package agent

import (
	"io/fs"
	"slices"
	"testing"

	"sigs.k8s.io/swdt/pkg/winos"
)

func TestSplitCommandLine(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`C:\k\kubelet.exe --v=2`, []string{`C:\k\kubelet.exe`, "--v=2"}},
		{`"C:\Program Files\containerd\containerd.exe"  --log-file "C:\log dir\c.log"`, []string{`C:\Program Files\containerd\containerd.exe`, "--log-file", `C:\log dir\c.log`}},
		{`a.exe --x="a b" ""`, []string{"a.exe", "--x=a b", ""}},
		{`a.exe say\"hi\"`, []string{"a.exe", `say"hi"`}},
		// What syscall.EscapeArg makes of a trailing backslash, of
		// backslashes before a quote and of backslashes elsewhere.
		{`a.exe "C:\dir with space\\" x`, []string{"a.exe", `C:\dir with space\`, "x"}},
		{`a.exe a\\\"b C:\k\x.log`, []string{"a.exe", `a\"b`, `C:\k\x.log`}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitCommandLine(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitCommandLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestServiceLogFile(t *testing.T) {
	w := registryOS{vals: map[string]string{`SYSTEM\CurrentControlSet\Services\nssmsvc\Parameters\AppStdout`: `C:\logs\out.log`}}
	tests := []struct {
		svc  winos.Service
		want string
	}{
		{winos.Service{Name: "kubelet", CommandLine: `C:\k\kubelet.exe --log-file=C:\k\kubelet.log --v=2`}, `C:\k\kubelet.log`},
		{winos.Service{Name: "kubelet", CommandLine: `C:\k\kubelet.exe -log_file C:\k\k.log`}, `C:\k\k.log`},
		{winos.Service{Name: "containerd", CommandLine: `"C:\Program Files\containerd\containerd.exe" --log-file "C:\log dir\c.log"`}, `C:\log dir\c.log`},
		{winos.Service{Name: "nssmsvc", CommandLine: `C:\k\nssm.exe`}, `C:\logs\out.log`},
		// kube-log-runner's own flag, before the kubelet's.
		{winos.Service{Name: "kubelet", CommandLine: `C:\k\kube-log-runner.exe -log-file=C:\var\log\kubelet\kubelet.log C:\k\kubelet.exe --windows-service`}, `C:\var\log\kubelet\kubelet.log`},
		{winos.Service{Name: "quiet", CommandLine: `C:\k\quiet.exe --log-file-max-size=10`}, ""},
		{winos.Service{Name: "quiet", CommandLine: `C:\k\quiet.exe --log-file`}, ""},
	}
	for _, tt := range tests {
		if got := serviceLogFile(w, tt.svc); got != tt.want {
			t.Errorf("serviceLogFile(%q) = %q, want %q", tt.svc.CommandLine, got, tt.want)
		}
	}
}

// registryOS is a Windows layer with only registry string values
// (key\name: value); anything else panics.
type registryOS struct {
	winos.OS
	vals map[string]string
}

func (r registryOS) RegistryValue(key, name string) (winos.RegistryValue, error) {
	v, ok := r.vals[key+`\`+name]
	if !ok {
		return winos.RegistryValue{}, fs.ErrNotExist
	}
	return winos.RegistryValue{Name: name, Kind: winos.RegString, String: v}, nil
}

func TestServiceProgram(t *testing.T) {
	w := registryOS{vals: map[string]string{
		`SYSTEM\CurrentControlSet\Services\wrapped\Parameters\Application`: `C:\k\kubelet.exe`,
		`SYSTEM\CurrentControlSet\Services\shell\Parameters\Application`:   `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`,
	}}
	tests := []struct {
		svc                               winos.Service
		wantExecutable, wantWrap, wantVia string
	}{
		{winos.Service{Name: "kubelet", CommandLine: `C:\k\kubelet.exe --v=2`}, `C:\k\kubelet.exe`, "", ""},
		{winos.Service{Name: "containerd", CommandLine: `"C:\Program Files\containerd\containerd.exe" --run-service`}, `C:\Program Files\containerd\containerd.exe`, "", ""},
		{winos.Service{Name: "wrapped", CommandLine: `C:\k\NSSM.exe`}, `C:\k\kubelet.exe`, `C:\k\NSSM.exe`, "nssm"},
		{winos.Service{Name: "unknown", CommandLine: `"C:\tools\nssm.exe"`}, "", `C:\tools\nssm.exe`, "nssm"},
		// A stopped service has no tree to show what the script starts.
		{winos.Service{Name: "shell", CommandLine: `"C:\tools\nssm.exe"`}, "", `C:\tools\nssm.exe`, "nssm + PowerShell"},
		// kube-log-runner runs its first argument that is no flag.
		{winos.Service{Name: "kubelet", CommandLine: `"C:\k\kube-log-runner.exe" "-log-file=C:\var\log\kubelet\kubelet.log" "C:\k\kubelet.exe" --windows-service`},
			`C:\k\kubelet.exe`, `C:\k\kube-log-runner.exe`, "kube-log-runner"},
		{winos.Service{Name: "kube-proxy", CommandLine: `C:\k\KUBE-LOG-RUNNER.exe -log-file C:\logs\p.log -also-stdout "C:\Program Files\k\kube-proxy.exe" --v=2`},
			`C:\Program Files\k\kube-proxy.exe`, `C:\k\KUBE-LOG-RUNNER.exe`, "kube-log-runner"},
		{winos.Service{Name: "nothing", CommandLine: `C:\k\kube-log-runner.exe -log-file=C:\x.log`}, "", `C:\k\kube-log-runner.exe`, "kube-log-runner"},
	}
	for _, tt := range tests {
		exe, wrap, via := serviceProgram(w, tt.svc)
		if exe != tt.wantExecutable || wrap != tt.wantWrap || via != tt.wantVia {
			t.Errorf("serviceProgram(%q) = %q, %q, %q; want %q, %q, %q", tt.svc.CommandLine, exe, wrap, via, tt.wantExecutable, tt.wantWrap, tt.wantVia)
		}
	}
}

func TestLogRunnerProgram(t *testing.T) {
	tests := []struct {
		argv []string
		want string
	}{
		{[]string{`kube-log-runner.exe`, `C:\k\kubelet.exe`, "--v=2"}, `C:\k\kubelet.exe`},
		{[]string{`kube-log-runner.exe`, "-log-file=C:\\l.log", "--also-stdout", "-redirect-stderr=false", `C:\k\kubelet.exe`}, `C:\k\kubelet.exe`},
		{[]string{`kube-log-runner.exe`, "-log-file", `C:\l.log`, "-log-file-size", "10Mi", "--flush-interval", "5s", "-log-file-age=24h", `C:\k\kubelet.exe`}, `C:\k\kubelet.exe`},
		{[]string{`kube-log-runner.exe`, "--", "-odd.exe"}, "-odd.exe"},
		{[]string{`kube-log-runner.exe`, "-log-file=C:\\l.log"}, ""},
		{[]string{`kube-log-runner.exe`, "--"}, ""},
		{[]string{`kube-log-runner.exe`}, ""},
	}
	for _, tt := range tests {
		if got := logRunnerProgram(tt.argv); got != tt.want {
			t.Errorf("logRunnerProgram(%q) = %q, want %q", tt.argv, got, tt.want)
		}
	}
}
