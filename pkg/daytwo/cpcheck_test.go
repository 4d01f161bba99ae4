package daytwo

import (
	"context"
	"debug/pe"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// peFile is a PE image for machine: the headers binfmt reads.
func peFile(machine uint16) []byte {
	b := make([]byte, 64)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 64)
	b = append(b, "PE\x00\x00"...)
	coff := make([]byte, 20)
	binary.LittleEndian.PutUint16(coff, machine)
	return append(b, coff...)
}

// cp onto a program on the node checks the build against the node's
// architecture before sending it: a service's binary the node file names
// (without .exe here) or any .exe; other files go as they are.
func TestCopyChecksAProgramAgainstTheNode(t *testing.T) {
	ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Arch = "arm64" }))
	spec := &v1alpha1.Node{}
	spec.Name, spec.Spec.Credentials = "win", ts.Credentials()
	spec.Spec.Kubernetes.Provisioners = []v1alpha1.ProvisionerSpec{{Name: "tool", SourceURL: "./tool", Destination: `C:\k\tool`}}
	connect := func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (*node.Node, error) {
		return node.Connect(ctx, *spec, node.ConnectOptions{Warn: warn})
	}
	dir := t.TempDir()
	amd64 := filepath.Join(dir, "amd64.exe")
	arm64 := filepath.Join(dir, "arm64.exe")
	for p, b := range map[string][]byte{amd64: peFile(pe.IMAGE_FILE_MACHINE_AMD64), arm64: peFile(pe.IMAGE_FILE_MACHINE_ARM64)} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		src, dst string
		refused  bool
	}{
		{amd64, `C:\k\kubelet.exe`, true},
		{amd64, `C:\k\tool`, true},
		{amd64, `C:\k\kubelet.log`, false},
		{arm64, `C:\k\new.exe`, false},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.src)+" to "+tt.dst, func(t *testing.T) {
			before, _ := ts.Node().ReadFile(tt.dst)
			_, err := Copy(context.Background(), spec, connect, tt.src, tt.dst, true, CopyOptions{Warn: func(string) {}})
			after, _ := ts.Node().ReadFile(tt.dst)
			if !tt.refused {
				if err != nil || string(after) != string(peFile(pe.IMAGE_FILE_MACHINE_AMD64)) && string(after) != string(peFile(pe.IMAGE_FILE_MACHINE_ARM64)) {
					t.Errorf("Copy: %v; the node holds %q", err, after)
				}
				return
			}
			want := "is a PE image for windows/amd64, but the node is windows/arm64: build it with GOOS=windows GOARCH=arm64"
			if err == nil || !strings.Contains(err.Error(), want) || exitcode.Code(err) != exitcode.Usage {
				t.Errorf("Copy: %v (exit %d), want it refused (exit 2): %s", err, exitcode.Code(err), want)
			}
			if string(after) != string(before) {
				t.Errorf("the node's %s changed to %q", tt.dst, after)
			}
		})
	}
}
