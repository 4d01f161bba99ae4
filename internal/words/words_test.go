package words

import "testing"

func TestCount(t *testing.T) {
	for _, tt := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "file", "1 file"},
		{0, "file", "0 files"},
		{3, "file", "3 files"},
		{2, "binary", "2 binaries"},
		{2, "key", "2 keys"},
		{2, "process", "2 processes"},
		{2, "patch", "2 patches"},
		{1, "binary", "1 binary"},
	} {
		if got := Count(tt.n, tt.noun); got != tt.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tt.n, tt.noun, got, tt.want)
		}
	}
}
