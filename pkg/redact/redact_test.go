package redact

import "testing"

func TestURLs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://user:s3cret@example.com/kubelet.exe", "https://***@example.com/kubelet.exe"},
		{"https://ghp_token@example.com/x", "https://***@example.com/x"},
		{"http://u:p@10.0.0.1:8080", "http://***@10.0.0.1:8080"},
		{"https://u:p%40ss@h/x?y=1#z", "https://***@h/x?***"},
		{"https://u:p@ss@h/x", "https://***@h/x"},
		// Not valid URLs, but the password must not show either.
		{"https://u:pa/ss@h/x", "https://***@h/x"},
		{"https://u:pa?ss@h", "https://***@h"},
		{"https://u:pa#ss@h", "https://***@h"},
		// In messages: every URL, wherever it ends.
		{`download https://u:p@h/x: server answered 401 Unauthorized`, `download https://***@h/x: server answered 401 Unauthorized`},
		{`Get "https://u:***@h/x": dial tcp: connection refused`, `Get "https://***@h/x": dial tcp: connection refused`},
		{`Get "https://u:p@h": EOF; also ftp://a:b@c/d`, `Get "https://***@h": EOF; also ftp://***@c/d`},
		{`{"error": "source https://u:p@h: not found"}`, `{"error": "source https://***@h: not found"}`},
		// Query strings and fragments: tokens, presigned signatures.
		{"https://h/kubelet.exe?X-Amz-Signature=abc&X-Amz-Credential=k", "https://h/kubelet.exe?***"},
		{"https://h/x#access_token=t", "https://h/x#***"},
		{`Get "https://h/x?sig=s3cret": EOF`, `Get "https://h/x?***": EOF`},
		// In JSON a quote is escaped: the query ends before the backslash.
		{`{"error": "Get \"https://h/x?timeout=30s\": EOF"}`, `{"error": "Get \"https://h/x?***\": EOF"}`},
		{`download https://h/x?sig=s3cret: 403 Forbidden.`, `download https://h/x?***: 403 Forbidden.`},
		{`see https://h/x?sig=s3cret.`, `see https://h/x?***.`},
		{"https://u:p@h/x?t=1 and https://h/y#f", "https://***@h/x?*** and https://h/y#***"},
		{"https://h/x?", "https://h/x?"},
		// Nothing to hide.
		{"https://example.com/kubelet.exe", "https://example.com/kubelet.exe"},
		{"https://proxy.golang.org/golang.org/x/sys/@v/v0.49.0.zip", "https://proxy.golang.org/golang.org/x/sys/@v/v0.49.0.zip"},
		{`Get "https://h/pkg@v1": EOF`, `Get "https://h/pkg@v1": EOF`},
		{"https://h:8443/a@b", "https://h:8443/a@b"},
		{"/home/me/bin/kubelet.exe", "/home/me/bin/kubelet.exe"},
		{`C:\k\kubelet.exe`, `C:\k\kubelet.exe`},
		{"Administrator@10.0.0.5", "Administrator@10.0.0.5"},
		{"", ""},
		{"https://", "https://"},
	}
	for _, tt := range tests {
		if got := URLs(tt.in); got != tt.want {
			t.Errorf("URLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
