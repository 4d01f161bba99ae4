package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

// A node file that lacks what a command needs (its section, a local
// source) is a usage error, exit 2, for every command, and nothing is
// contacted or changed.
func TestNodeFileProblemsExitUsage(t *testing.T) {
	t.Parallel()
	fx := newKubeFixture(t)
	winsFile := winsNodeFile(t, fx.ts, "", "MZ rancher/wins v0.15.1\n")
	if err := os.Remove(filepath.Join(filepath.Dir(winsFile), "wins.exe")); err != nil {
		t.Fatal(err)
	}
	noKubelet := newKubeFixture(t)
	if err := os.Remove(noKubelet.sourcePath("kubelet")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"join without a join section", []string{"join", "-c", fx.config}, "no node has spec.kubernetes.join"},
		{"wins without a wins section", []string{"wins", "-c", fx.config}, "has spec.wins"},
		{"vm without a vm section", []string{"vm", "status", "-c", fx.config}, "has no spec.vm"},
		{"kubernetes without a source", []string{"kubernetes", "-c", noKubelet.config, "--cache-dir", noKubelet.cache}, "does not exist"},
		{"wins without its source", []string{"wins", "-c", winsFile}, "does not exist"},
		{"cp without its source", []string{"cp", "-c", fx.config, filepath.Join(fx.dir, "nothing-here"), `sim:C:\k`}, "nothing-here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, append(tt.args, "--no-color")...)
			if code != exitcode.Usage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %d and %q:\n%s", code, exitcode.Usage, tt.want, errOut)
			}
		})
	}
}
