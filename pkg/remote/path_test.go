package remote

import "testing"

func TestSFTPPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{`C:\k\kubelet.exe`, "/C:/k/kubelet.exe"},
		{`c:\k\kubelet.exe`, "/C:/k/kubelet.exe"},
		{`C:/k/kubelet.exe`, "/C:/k/kubelet.exe"},
		{`/C:/k/kubelet.exe`, "/C:/k/kubelet.exe"},
		{`/c:/k/kubelet.exe`, "/C:/k/kubelet.exe"},
		{`C:\Program Files\containerd\containerd.exe`, "/C:/Program Files/containerd/containerd.exe"},
		{`C:\`, "/C:/"},
		{`C:`, "/C:/"},
		{`C:\k\`, "/C:/k"},
		{`C:\k\\sub\..\kubelet.exe`, "/C:/k/kubelet.exe"},
		{`C:\..\..\x`, "/C:/x"},
		{`C:\..`, "/C:/"},
		{`\\server\share\f.exe`, "//server/share/f.exe"},
		{`k\kubelet.exe`, "k/kubelet.exe"},
		{`/tmp/x/y`, "/tmp/x/y"},
		{``, ``},
	}
	for _, tt := range tests {
		got := SFTPPath(tt.in)
		if got != tt.want {
			t.Errorf("SFTPPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if again := SFTPPath(got); again != got {
			t.Errorf("SFTPPath not idempotent: %q -> %q -> %q", tt.in, got, again)
		}
	}
}
