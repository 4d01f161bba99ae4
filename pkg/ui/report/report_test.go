package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/setup"
	"sigs.k8s.io/swdt/pkg/status"
	"sigs.k8s.io/swdt/pkg/ui"
)

func jsonUI(stream bool) (*ui.UI, *bytes.Buffer) {
	var out, errb bytes.Buffer
	u := ui.New(&out, &errb, ui.Options{Format: ui.FormatJSON, Color: ui.ColorNever})
	if stream {
		u.Stream()
	}
	return u, &out
}

// A read that found nothing new has "lines": [] and "events": [], in a
// single read as under --follow, where each read is one line.
func TestLogsListsAreNeverNull(t *testing.T) {
	for _, stream := range []bool{false, true} {
		u, out := jsonUI(stream)
		r := daytwo.Read{Node: "n1", Services: []daytwo.ServiceLog{{Service: "kubelet", Status: "Running"}}}
		if err := PrintLogs(u, r); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if strings.Contains(got, "null") || !strings.Contains(got, `"lines":`) {
			t.Errorf("stream=%t: %s", stream, got)
		}
		if lines := strings.Count(got, "\n"); stream && lines != 1 || !stream && lines < 2 {
			t.Errorf("stream=%t: %d lines:\n%s", stream, lines, got)
		}
	}
}

// A node's result is the weightiest of its items'.
func TestNodeResult(t *testing.T) {
	tests := []struct {
		items []string
		want  string
	}{
		{nil, Unchanged},
		{[]string{Unchanged, Unchanged}, Unchanged},
		{[]string{Unchanged, WouldChange}, WouldChange},
		{[]string{WouldChange, Changed, Unchanged}, Changed},
		{[]string{Changed, RolledBack}, RolledBack},
		{[]string{RolledBack, Failed, Changed}, Failed},
	}
	for _, tt := range tests {
		if got := worst(tt.items...); got != tt.want {
			t.Errorf("worst(%v) = %s, want %s", tt.items, got, tt.want)
		}
	}
}

// setup reports a result per node: its steps', or failed.
func TestSetupNodeResult(t *testing.T) {
	u, out := jsonUI(false)
	results := []fleet.Result[*setup.Report]{
		{Node: "a", Value: &setup.Report{Steps: []setup.Step{{Name: "rdp", Result: setup.Unchanged}, {Name: "keys", Result: setup.Changed}}}},
		{Node: "b", Err: errors.New("unreachable")},
	}
	if err := PrintSetup(u, results); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{`"name": "a", "result": "changed"`, `"name": "b", "result": "failed"`} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %s: %s", want, got)
		}
	}
}

// status's result is its own: in-sync or out-of-sync, never unchanged.
func TestStatusResult(t *testing.T) {
	tests := []struct {
		sources []string
		want    string
	}{
		{nil, InSync},
		{[]string{status.InSync, status.InSync}, InSync},
		{[]string{status.InSync, status.Differs}, OutOfSync},
		{[]string{status.Missing}, OutOfSync},
	}
	for _, tt := range tests {
		r := &status.Report{}
		for _, s := range tt.sources {
			r.Binaries = append(r.Binaries, status.Binary{Source: s})
		}
		if got := statusResult(r); got != tt.want {
			t.Errorf("%v: %s, want %s", tt.sources, got, tt.want)
		}
	}
}
