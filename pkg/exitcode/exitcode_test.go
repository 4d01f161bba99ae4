package exitcode

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestCode(t *testing.T) {
	base := fs.ErrNotExist
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, OK},
		{"plain", base, Failure},
		{"usage", WithCode(Usage, base), Usage},
		{"wrapped", fmt.Errorf("load: %w", WithCode(Usage, base)), Usage},
		{"partial", WithCode(Partial, base), Partial},
		{"outermost wins", WithCode(Partial, fmt.Errorf("x: %w", WithCode(Usage, base))), Partial},
		{"joined", errors.Join(base, WithCode(Usage, base)), Usage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Code(tt.err); got != tt.want {
				t.Errorf("Code() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWithCodeKeepsError(t *testing.T) {
	if WithCode(Usage, nil) != nil {
		t.Error("WithCode(nil) must be nil")
	}
	err := WithCode(Usage, fmt.Errorf("open: %w", fs.ErrNotExist))
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != "open: file does not exist" {
		t.Errorf("WithCode changed the error: %v", err)
	}
}
