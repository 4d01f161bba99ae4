package agent

import "testing"

func TestServiceExecutable(t *testing.T) {
	tests := []struct {
		name        string
		commandLine string
		want        string
	}{
		{"quoted with arguments", `"C:\Program Files\containerd\containerd.exe" --run-service`, `C:\Program Files\containerd\containerd.exe`},
		{"quoted alone", `"C:\k\kubelet.exe"`, `C:\k\kubelet.exe`},
		{"quoted, no closing quote", `"C:\k\kubelet.exe --v=2`, `C:\k\kubelet.exe --v=2`},
		{"leading blanks", " \t\"C:\\k\\kubelet.exe\" --v=2", `C:\k\kubelet.exe`},
		{"unquoted with arguments", `C:\k\kubelet.exe --windows-service --v=2`, `C:\k\kubelet.exe`},
		{"unquoted alone", `C:\k\kubelet.exe`, `C:\k\kubelet.exe`},
		{"unquoted with spaces", `C:\Program Files\containerd\containerd.exe --run-service`, `C:\Program Files\containerd\containerd.exe`},
		{"unquoted, tab before arguments", "C:\\k\\kube-proxy.exe\t--v=2", `C:\k\kube-proxy.exe`},
		{"upper-case extension", `C:\WINDOWS\system32\svchost.EXE -k netsvcs -p`, `C:\WINDOWS\system32\svchost.EXE`},
		{"environment variable", `%SystemRoot%\System32\svchost.exe -k LocalService`, `%SystemRoot%\System32\svchost.exe`},
		{".exe inside a directory name", `C:\tools.exe.d\bin\flanneld.exe --iface=eth0`, `C:\tools.exe.d\bin\flanneld.exe`},
		{".exe inside an argument only", `C:\k\svc --wrap=C:\x\y.exe`, `C:\k\svc`},
		{"no extension", `C:\opt\bin\agent --serve`, `C:\opt\bin\agent`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := serviceExecutable(tt.commandLine); got != tt.want {
				t.Errorf("serviceExecutable(%q) = %q, want %q", tt.commandLine, got, tt.want)
			}
		})
	}
}
