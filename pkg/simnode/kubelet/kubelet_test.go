package kubelet

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/simnode/machine"
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
		{name: "unterminated", content: []byte(machine.MarkerKubelet + "v1.37.2"), wantErr: "unterminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			if err := os.WriteFile(p, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := kubeletVersion(f)
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

// kubelet.exe validates its configuration before it connects anywhere: a
// Windows node's cgroupsPerQOS false needs node-allocatable enforcement
// off, which only a flag can say (an empty list in the file is omitted,
// then defaulted to pods).
func TestKubeletConfigError(t *testing.T) {
	files := map[string][]byte{}
	readFile := func(p string) ([]byte, error) {
		if raw, ok := files[p]; ok {
			return raw, nil
		}
		return nil, fs.ErrNotExist
	}
	for _, tc := range []struct {
		name   string
		config string
		args   []string
		want   string
	}{
		{name: "no configuration", args: nil},
		{name: "cgroupsPerQOS false in the file, enforcement by default", config: "cgroupsPerQOS: false\n",
			want: "cgroupsPerQOS (--cgroups-per-qos) must be set to true"},
		{name: "an empty list in the file is the default", config: "cgroupsPerQOS: false\nenforceNodeAllocatable: []\n",
			want: "cgroupsPerQOS (--cgroups-per-qos) must be set to true"},
		{name: "enforcement off by flag", config: "cgroupsPerQOS: false\n", args: []string{"--enforce-node-allocatable="}},
		{name: "both by flag", args: []string{"--cgroups-per-qos=false", "--enforce-node-allocatable="}},
		{name: "cgroupsPerQOS false by flag", args: []string{"--cgroups-per-qos=false"}, want: "must be set to true"},
		{name: "a missing file", args: []string{`--config=C:\var\lib\kubelet\nope.yaml`}, want: "failed to load kubelet config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			if tc.config != "" {
				files[`C:\var\lib\kubelet\config.yaml`] = []byte(tc.config)
				args = append([]string{`--config=C:\var\lib\kubelet\config.yaml`}, args...)
			}
			got := configError(args, readFile)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("error %q, want %q", got, tc.want)
			}
		})
	}
}
