package ntfs

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

// TestFindMarkers: one pass finds every marker wherever it sits, also
// across the scan's read boundaries and next to a lone prefix.
func TestFindMarkers(t *testing.T) {
	const block = 256 * 1024
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{name: "none", content: strings.Repeat("SIMNODE", 1000)},
		{name: "a lone prefix", content: "SIMNODE-NOTHING SIMNODE-"},
		{name: "at the start", content: MarkerHangOnStop + "x", want: []string{MarkerHangOnStop}},
		{name: "across a read boundary", content: strings.Repeat("x", block-10) + MarkerCrashOnStart, want: []string{MarkerCrashOnStart}},
		{name: "at the very end", content: strings.Repeat("x", 2*block) + MarkerExitOnStop, want: []string{MarkerExitOnStop}},
		{name: "several, one overlapping a prefix", content: "SIMNODE-" + MarkerWinsNoPipe + strings.Repeat("y", block) + MarkerKubelet + "1.2.3;",
			want: []string{MarkerWinsNoPipe, MarkerKubelet}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := findMarkers(strings.NewReader(tt.content))
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, m := range tt.want {
				want[m] = true
			}
			if !maps.Equal(got, want) {
				t.Errorf("found %v, want %v", got, want)
			}
		})
	}
}

// TestMarkerStream: markers found as a file is written, in writes of any
// size, are the ones a read of the whole file finds.
func TestMarkerStream(t *testing.T) {
	content := "x" + MarkerCrashOnStart + strings.Repeat("y", 100) + MarkerKubelet + "1.2.3;" + strings.Repeat("z", 5000) + "SIMNODE-" + MarkerWinsNoPipe
	for _, size := range []int{1, 7, 30, 31, 32, 33, 1000, len(content)} {
		t.Run(fmt.Sprintf("writes of %d bytes", size), func(t *testing.T) {
			s := newMarkerStream()
			for b := []byte(content); len(b) > 0; {
				n := min(size, len(b))
				s.write(b[:n])
				b = b[n:]
			}
			want, err := findMarkers(strings.NewReader(content))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(s.found, want) {
				t.Errorf("found %v, want %v", s.found, want)
			}
		})
	}
}

// TestMarkerStreamSkip: bytes known to hold no marker, followed by their
// ends alone, give the markers a scan of the whole file finds: those that
// cross into or out of them too, and none made up of head and tail.
func TestMarkerStreamSkip(t *testing.T) {
	clean := strings.Repeat("c", 40) + "SIMNODE-" + strings.Repeat("d", 100) + MarkerCrashOnStart[8:] + strings.Repeat("e", 40)
	tests := []struct {
		name         string
		before, skip string
		after        string
	}{
		{name: "none", before: "x", skip: clean, after: "y"},
		{name: "a marker into the skipped bytes", before: "x" + MarkerHangOnStop[:10], skip: MarkerHangOnStop[10:] + clean, after: "y"},
		{name: "a marker out of them", before: "x", skip: clean + MarkerExitOnStop[:20], after: MarkerExitOnStop[20:]},
		{name: "head and tail would make one", before: "x", skip: strings.Repeat("z", markerOverlap-8) + "SIMNODE-" + strings.Repeat("z", 60) + MarkerWinsNoPipe[8:] + strings.Repeat("z", markerOverlap-len(MarkerWinsNoPipe[8:])), after: "y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newMarkerStream()
			s.write([]byte(tt.before))
			k := []byte(tt.skip)
			s.skip(k[:markerOverlap], k[len(k)-markerOverlap:], int64(len(k)))
			s.write([]byte(tt.after))
			whole := tt.before + tt.skip + tt.after
			want, err := findMarkers(strings.NewReader(whole))
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(s.found, want) || s.n != int64(len(whole)) {
				t.Errorf("found %v after %d bytes, want %v after %d", s.found, s.n, want, len(whole))
			}
		})
	}
}
