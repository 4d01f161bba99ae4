package vm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// fakeVM is a Provider that answers from its fields and records Close.
type fakeVM struct {
	name   string
	closed *int
}

func (f fakeVM) Describe() string { return "VM " + f.name }
func (f fakeVM) Status(context.Context) (Status, error) {
	return Status{Name: f.name, State: StateRunning}, nil
}
func (f fakeVM) Start(context.Context) (bool, error) { return f.name == "a", nil }
func (f fakeVM) Stop(context.Context, time.Duration) (Stopped, error) {
	return Stopped{AlreadyOff: true}, nil
}
func (f fakeVM) Snapshot(context.Context, string) error        { return nil }
func (f fakeVM) Revert(context.Context, string) (State, error) { return StateOff, nil }
func (f fakeVM) Snapshots(context.Context) ([]Snapshot, error) { return nil, nil }
func (f fakeVM) Addresses(context.Context) ([]Address, error)  { return nil, nil }
func (f fakeVM) Close() error                                  { *f.closed++; return nil }

func vmNodes(names ...string) []v1alpha1.Node {
	out := make([]v1alpha1.Node, len(names))
	for i, n := range names {
		out[i].Name = n
		if !strings.HasPrefix(n, "bare") {
			out[i].Spec.VM = &v1alpha1.VMSpec{Name: "vm-" + n}
		}
	}
	return out
}

func TestNewFleetNeedsSpecVM(t *testing.T) {
	tests := []struct {
		nodes []string
		want  string
	}{
		{nodes: []string{"a", "b"}},
		{nodes: []string{"a", "bare1"}, want: "node bare1 has no spec.vm"},
		{nodes: []string{"bare1", "a", "bare2"}, want: "node bare1, bare2 has no spec.vm"},
	}
	for _, tt := range tests {
		opened := false
		_, err := NewFleet(vmNodes(tt.nodes...), func(context.Context, *v1alpha1.Node) (Provider, error) {
			opened = true
			return nil, errors.New("not reached")
		})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%v: %v", tt.nodes, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || exitcode.Code(err) != exitcode.Usage):
			t.Errorf("%v: error %v (exit %d), want %q with exit %d", tt.nodes, err, exitcode.Code(err), tt.want, exitcode.Usage)
		}
		if opened {
			t.Errorf("%v: a hypervisor was opened", tt.nodes)
		}
	}
}

func TestFleetVerbs(t *testing.T) {
	closed := 0
	unreachable := errors.New("hypervisor unreachable")
	f, err := NewFleet(vmNodes("a", "b", "c"), func(_ context.Context, n *v1alpha1.Node) (Provider, error) {
		if n.Name == "c" {
			return nil, unreachable
		}
		return fakeVM{name: n.Name, closed: &closed}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tests := []struct {
		name string
		run  func() (values []any, reports []Report[struct{}], err error)
		want []any
	}{
		{"start", wrap(f.Start(ctx)), []any{StartResult{AlreadyRunning: true}, StartResult{}}},
		{"stop", wrap(f.Stop(ctx, time.Second)), []any{Stopped{AlreadyOff: true}, Stopped{AlreadyOff: true}}},
		{"snapshot", wrap(f.Snapshot(ctx, "s1")), []any{SnapshotResult{Snapshot: "s1"}, SnapshotResult{Snapshot: "s1"}}},
		{"revert", wrap(f.Revert(ctx, "s1")), []any{RevertResult{Snapshot: "s1", State: StateOff}, RevertResult{Snapshot: "s1", State: StateOff}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			values, reports, err := tt.run()
			for i, r := range reports {
				if r.Node != []string{"a", "b", "c"}[i] || r.VM != "vm-"+r.Node {
					t.Errorf("report %d is of node %s, VM %s", i, r.Node, r.VM)
				}
			}
			for i, v := range tt.want {
				if values[i] != v {
					t.Errorf("node %d: %+v, want %+v", i, values[i], v)
				}
			}
			if !errors.Is(err, unreachable) || exitcode.Code(err) != exitcode.Partial || !strings.Contains(err.Error(), "node c:") {
				t.Errorf("Err = %v (exit %d), want node c unreachable, partial", err, exitcode.Code(err))
			}
		})
	}
	if closed != 2*len(tests) {
		t.Errorf("%d providers closed, want %d", closed, 2*len(tests))
	}
	if r := f.Snapshots(ctx); r[0].Value.Snapshots == nil || len(r[0].Value.Snapshots) != 0 {
		t.Errorf("no snapshots: %#v, want an empty list", r[0].Value.Snapshots)
	}
	if r := f.Addresses(ctx); r[0].Value.Addresses == nil || len(r[0].Value.Addresses) != 0 {
		t.Errorf("no addresses: %#v, want an empty list", r[0].Value.Addresses)
	}
}

// wrap turns one verb's reports into values and untyped reports, so
// that one table covers every verb.
func wrap[T any](reports []Report[T]) func() ([]any, []Report[struct{}], error) {
	return func() ([]any, []Report[struct{}], error) {
		var values []any
		var out []Report[struct{}]
		for _, r := range reports {
			values = append(values, r.Value)
			out = append(out, Report[struct{}]{VM: r.VM})
			out[len(out)-1].Node, out[len(out)-1].Err = r.Node, r.Err
		}
		return values, out, Err(reports)
	}
}
