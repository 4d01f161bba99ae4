package ntfs

import "testing"

func TestWinPath(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{`C:\k\kubelet.exe`, `C:\k\kubelet.exe`, true},
		{`c:/k/kubelet.exe`, `C:\k\kubelet.exe`, true},
		{`/C:/k/kubelet.exe`, `C:\k\kubelet.exe`, true},
		{`/C:/Users/Administrator/C:/k/x`, `C:\k\x`, true},
		{`C:\k\..\k\x`, `C:\k\x`, true},
		{`C:\`, `C:\`, true},
		{`C:\..\x`, ``, false},
		{`k\kubelet.exe`, ``, false},
		{`C:\a:b`, ``, false},
	}
	for _, tc := range tests {
		got, err := ParsePath(tc.in)
		if (err == nil) != tc.ok || string(got) != tc.want {
			t.Errorf("ParsePath(%q) = %q, %v; want %q ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
