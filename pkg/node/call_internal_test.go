package node

import (
	"strings"
	"testing"
)

func TestLoggedRequest(t *testing.T) {
	long := `{"data":"` + strings.Repeat("A", 2*maxLogged) + `"}`
	tests := []struct {
		name   string
		params string
		want   string
	}{
		{name: "a short request is logged whole", params: `{"runId":"a"}`, want: `{"runId":"a"}`},
		{name: "a request at the bound is logged whole", params: strings.Repeat("x", maxLogged), want: strings.Repeat("x", maxLogged)},
		{name: "a long request is cut and its length said", params: long, want: long[:maxLogged] + "... (8203 bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := logged([]byte(tc.params)); got != tc.want {
				t.Errorf("logged %d bytes: got %q..., want %q...", len(tc.params), got[max(0, len(got)-40):], tc.want[max(0, len(tc.want)-40):])
			}
		})
	}
}
