//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// fixture lets the bench use the cluster tier's fixtures
// (internal/clustertest, simnode.StartTest), which take a testing.TB, in
// a program: temporary directories under the bench's, cleanups run by
// close in reverse order, and a fatal error or skip stops the caller by a
// panic that catch turns into an error. Only the methods those fixtures
// call are implemented; the embedded nil TB is never reached through
// them.
type fixture struct {
	testing.TB
	dir      string
	n        int
	cleanups []func()
	ctx      context.Context
	cancel   context.CancelFunc
}

// fixtureStop is the panic of a fixture's Fatal or Skip.
type fixtureStop struct{ err error }

func newFixture(dir string) *fixture {
	ctx, cancel := context.WithCancel(context.Background())
	return &fixture{dir: dir, ctx: ctx, cancel: cancel}
}

func (f *fixture) Helper()                  {}
func (f *fixture) Name() string             { return "bench" }
func (f *fixture) Failed() bool             { return false }
func (f *fixture) Context() context.Context { return f.ctx }
func (f *fixture) Cleanup(fn func())        { f.cleanups = append(f.cleanups, fn) }
func (f *fixture) Log(args ...any) {
	fmt.Fprintln(os.Stderr, append([]any{"bench: fixture:"}, args...)...)
}
func (f *fixture) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: fixture: "+format+"\n", args...)
}
func (f *fixture) Error(args ...any)                 { f.Fatal(args...) }
func (f *fixture) Errorf(format string, args ...any) { f.Fatalf(format, args...) }
func (f *fixture) Fatal(args ...any)                 { panic(fixtureStop{fmt.Errorf("%s", fmt.Sprint(args...))}) }
func (f *fixture) Fatalf(format string, args ...any) { panic(fixtureStop{fmt.Errorf(format, args...)}) }
func (f *fixture) FailNow()                          { f.Fatal("failed") }
func (f *fixture) Skip(args ...any)                  { f.Fatal(args...) }
func (f *fixture) Skipf(format string, args ...any)  { f.Fatalf(format, args...) }
func (f *fixture) SkipNow()                          { f.Fatal("skipped") }

// TempDir is a new directory under the bench's, removed by close.
func (f *fixture) TempDir() string {
	f.n++
	d := filepath.Join(f.dir, fmt.Sprintf("fixture-%03d", f.n))
	if err := os.MkdirAll(d, 0o700); err != nil {
		f.Fatalf("fixture directory: %v", err)
	}
	f.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// close runs the cleanups, last first.
func (f *fixture) close() {
	f.cancel()
	for _, fn := range slices.Backward(f.cleanups) {
		fn()
	}
	f.cleanups = nil
}

// catch turns a fixture's Fatal or Skip, panicking in the caller, into
// *err; other panics go on. Deferred by the caller.
func catch(err *error) {
	r := recover()
	if r == nil {
		return
	}
	s, ok := r.(fixtureStop)
	if !ok {
		panic(r)
	}
	*err = s.err
}
