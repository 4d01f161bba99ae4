//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// allocEnv makes the test binary a program that holds allocMiB of memory
// and exits: a client whose peak RSS is known.
const (
	allocEnv = "SWDT_BENCH_TEST_ALLOC"
	allocMiB = 64
)

func TestMain(m *testing.M) {
	if os.Getenv(allocEnv) != "" {
		b := make([]byte, allocMiB<<20)
		for i := range b {
			b[i] = byte(i)
		}
		runtime.KeepAlive(b)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// execwrap measures a client's own peak RSS: /bin/true at a few MiB (the
// bench started again as the parent measured every client at 41 MiB or
// more), a program that holds 64 MiB at 64 MiB or more; it passes the
// client's exit status on.
func TestExecwrapMeasuresTheClientAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds execwrap")
	}
	wrapper, err := buildWrapper(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{dir: t.TempDir(), wrapper: wrapper}
	tests := []struct {
		name           string
		prog           string
		args           []string
		env            string
		minKB, maxKB   int64 // maxKB 0: no bound
		wantExitStatus int
	}{
		{name: "a small program", prog: "/bin/true", maxKB: 8 << 10},
		{name: "a program that holds 64 MiB", prog: self, env: allocEnv + "=1", minKB: allocMiB << 10},
		{name: "a program that fails", prog: "/bin/sh", args: []string{"-c", "exit 3"}, maxKB: 8 << 10, wantExitStatus: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "" {
				t.Setenv(allocEnv, "1")
			}
			m, err := b.timed(nil, nil, tc.prog, tc.args...)
			var ee *exec.ExitError
			switch {
			case tc.wantExitStatus != 0:
				if !errors.As(err, &ee) || ee.ExitCode() != tc.wantExitStatus {
					t.Fatalf("err = %v, want exit status %d", err, tc.wantExitStatus)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if m.MaxRSSKB < tc.minKB || (tc.maxKB > 0 && m.MaxRSSKB > tc.maxKB) {
				t.Errorf("peak RSS %d KiB, want at least %d and at most %d (0: any)", m.MaxRSSKB, tc.minKB, tc.maxKB)
			}
			if m.Wall <= 0 {
				t.Errorf("wall time %s", m.Wall)
			}
			if _, err := os.Stat(filepath.Join(b.dir, "measured.json")); err != nil {
				t.Errorf("what execwrap measured: %v", err)
			}
		})
	}
}
