package node

import (
	"bytes"
	"testing"
)

// The result line is kept and everything else passes through, however
// the stream is cut into writes.
func TestResultFilter(t *testing.T) {
	const result = "#swdt-result-v1#{\"ok\":true}\r\n"
	tests := []struct {
		name, in, wantOut, wantLine string
	}{
		{"only the result", result, "", result},
		{"lines before", "warning: a\r\nb\n" + result, "warning: a\r\nb\n", result},
		{"a prompt without a newline passes at once", "Password: ", "Password: ", ""},
		{"a marker in the middle of a line is output", "say #swdt-result-v1# ok\n", "say #swdt-result-v1# ok\n", ""},
		{"a partial marker that turns out not to be one", "#swdt-res!\n" + result, "#swdt-res!\n", result},
		{"no newline after the result", "x\n#swdt-result-v1#{}", "x\n", "#swdt-result-v1#{}"},
	}
	for _, tt := range tests {
		for _, chunk := range []int{1, 3, len(tt.in)} {
			var out bytes.Buffer
			f := &resultFilter{w: &out}
			for i := 0; i < len(tt.in); i += chunk {
				if _, err := f.Write([]byte(tt.in[i:min(i+chunk, len(tt.in))])); err != nil {
					t.Fatal(err)
				}
			}
			if err := f.flush(); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.wantOut || string(f.line) != tt.wantLine {
				t.Errorf("%s (writes of %d): out %q line %q, want %q and %q", tt.name, chunk, out.String(), f.line, tt.wantOut, tt.wantLine)
			}
		}
	}
}
