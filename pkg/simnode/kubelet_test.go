package simnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestKubeletVersion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content []byte
		want    string
		wantErr string
	}{
		{name: "stand-in", content: KubeletBinary("v1.37.2"), want: "v1.37.2"},
		{name: "marker after a false start", content: []byte("SIMNODE-KUBE SIMNODE-KUBELET-VERSION=v1.36.0-alpha.1;"), want: "v1.36.0-alpha.1"},
		{name: "marker far into a large file", content: append([]byte(strings.Repeat("x", 600*1024)), KubeletBinary("v1.35.1")...), want: "v1.35.1"},
		{name: "no marker", content: []byte("MZ kubelet"), wantErr: "no kubelet version marker"},
		{name: "unterminated", content: []byte(MarkerKubelet + "v1.37.2"), wantErr: "unterminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(p, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := kubeletVersion(p)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestParseKubeletFlags(t *testing.T) {
	f := parseKubeletFlags([]string{"--windows-service", "--bootstrap-kubeconfig=C:\\b.conf", "--kubeconfig=C:\\k.conf",
		"--config=C:\\c.yaml", "--hostname-override=win-01", "--node-labels=a=1,b=2", "--v=4"})
	want := kubeletFlags{bootstrapKubeconfig: `C:\b.conf`, kubeconfig: `C:\k.conf`, config: `C:\c.yaml`, hostname: "win-01", labels: "a=1,b=2"}
	if f != want {
		t.Errorf("flags = %+v, want %+v", f, want)
	}
}
