package winpath

import "testing"

func TestBaseAndDir(t *testing.T) {
	tests := []struct {
		path, base, dir string
	}{
		{`C:\k\kubelet.log`, "kubelet.log", `C:\k`},
		{`C:\k\logs\`, "logs", `C:\k`},
		{`C:\kubelet.log`, "kubelet.log", `C:\`},
		{`C:/k/x`, "x", `C:/k`},
		{`C:/x`, "x", `C:/`},
		{`notes.txt`, "notes.txt", ""},
		{`/tmp/x`, "x", "/tmp"},
		{`/x`, "x", "/"},
		{`\\server\share\x.exe`, "x.exe", `\\server\share`},
	}
	for _, tt := range tests {
		if b, d := Base(tt.path), Dir(tt.path); b != tt.base || d != tt.dir {
			t.Errorf("%s: base %q dir %q, want %q %q", tt.path, b, d, tt.base, tt.dir)
		}
	}
}

func TestJoin(t *testing.T) {
	tests := []struct {
		dir, want string
	}{
		{`C:\k`, `C:\k\a`},
		{`C:\`, `C:\a`},
		{`C:`, `C:\a`},
		{`k`, `k\a`},
		{``, `a`},
		{`C:\k/sub`, `C:\k/sub\a`},
		// Slashes only: the node's path stays in that form (an OpenSSH
		// sshd on Linux takes nothing else).
		{`C:/k`, `C:/k/a`},
		{`/srv/k`, `/srv/k/a`},
		{`/srv/k/`, `/srv/k/a`},
		{`/`, `/a`},
	}
	for _, tt := range tests {
		if got := Join(tt.dir, "a"); got != tt.want {
			t.Errorf("Join(%q, a) = %q, want %q", tt.dir, got, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ path, want string }{
		{`C:\k\kubelet.exe`, `C:\k\kubelet.exe`},
		{`C:/opt/flannel/flanneld.exe`, `C:\opt\flannel\flanneld.exe`},
		{`C:\k\\sub\..\kubelet.exe`, `C:\k\kubelet.exe`},
		{`C:\k\`, `C:\k`},
		{`C:\`, `C:\`},
		{`C:/`, `C:\`},
		{`C:`, `C:`},
		{`\\server\share\x`, `\\server\share\x`},
		{`kubelet.exe`, `kubelet.exe`},
		{``, ``},
	}
	for _, tt := range tests {
		if got := Clean(tt.path); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestEqualAndWithin(t *testing.T) {
	tests := []struct {
		a, b          string
		equal, within bool // Equal(a, b), Within(a, b)
	}{
		{`C:\k\kubelet.exe`, `c:/K/KUBELET.EXE`, true, false},
		{`C:\k\`, `C:\k`, true, false},
		{`C:\opt\cni\bin`, `C:\opt\cni\bin\flannel.exe`, false, true},
		{`C:\opt\cni\bin`, `c:/OPT/cni/bin/sub/x.exe`, false, true},
		{`C:\opt\cni\bin`, `C:\opt\cni\binaries\x.exe`, false, false},
		{`C:\`, `C:\k\x.exe`, false, true},
		{`C:\k`, `D:\k\x.exe`, false, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.a, tt.b); got != tt.equal {
			t.Errorf("Equal(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.equal)
		}
		if got := Within(tt.a, tt.b); got != tt.within {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.within)
		}
	}
}
