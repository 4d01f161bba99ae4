package kubeconn

import (
	"bytes"
	"slices"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

// An op runs the agent's argv directly; any other line goes to cmd.exe.
func TestArgv(t *testing.T) {
	agent := `C:\Program Files\swdt\swdt-agent-0123456789abcdef.exe`
	for _, tc := range []struct {
		cmd  string
		want []string
	}{
		{cmd: ops.CommandLine(agent, "node-facts"), want: []string{agent, "op", "node-facts"}},
		{cmd: "hostname", want: []string{"cmd.exe", "/d", "/c", "hostname"}},
	} {
		if got := argv(tc.cmd); !slices.Equal(got, tc.want) {
			t.Errorf("argv(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// The result marker is found on either stream, split across writes.
func TestMarkerWatch(t *testing.T) {
	m := ops.ResultMarker
	type write struct {
		side int
		data string
	}
	for _, tc := range []struct {
		name   string
		writes []write
		want   bool
	}{
		{name: "whole, on stdout", writes: []write{{0, "noise\n" + m + `{"ok":true}` + "\n"}}, want: true},
		{name: "split across writes, on stderr", writes: []write{{1, "program output\n" + m[:5]}, {1, m[5:] + "{}\n"}}, want: true},
		{name: "halves on different streams", writes: []write{{0, m[:5]}, {1, m[5:]}}},
		{name: "nothing", writes: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &markerWatch{}
			for _, wr := range tc.writes {
				if _, err := w.side(wr.side).Write([]byte(wr.data)); err != nil {
					t.Fatal(err)
				}
			}
			if got := w.found(); got != tc.want {
				t.Errorf("found = %v, want %v", got, tc.want)
			}
		})
	}
}

// The file script's reply is its first line; what follows is the data.
func TestReplySplitter(t *testing.T) {
	var rest bytes.Buffer
	w := &replySplitter{rest: &rest}
	for _, p := range []string{`{"ok":`, "true}\nMZ\x00", "more"} {
		if _, err := w.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if !w.done || w.line.String() != `{"ok":true}` || rest.String() != "MZ\x00more" || w.extra != nil {
		t.Errorf("line %q (done %v), rest %q, extra %v", w.line.String(), w.done, rest.String(), w.extra)
	}
	noRest := &replySplitter{}
	if _, err := noRest.Write([]byte("{}\nunexpected")); err != nil || noRest.extra == nil {
		t.Errorf("bytes after a reply that takes none: %v, extra %v", err, noRest.extra)
	}
}
