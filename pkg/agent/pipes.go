package agent

import (
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/winos"
)

// pipesExist reports which of names exist below \\.\pipe\ (pipe names
// compare without regard to case): from one listing of \\.\pipe\, or,
// when the system cannot list it (Wine cannot; some hardened images
// cannot either), by probing each name.
func pipesExist(w winos.OS, names ...string) (map[string]bool, error) {
	found := make(map[string]bool, len(names))
	listed, lerr := w.Pipes()
	if lerr == nil {
		for _, want := range names {
			for _, p := range listed {
				if strings.EqualFold(p, want) {
					found[want] = true
				}
			}
			if !found[want] {
				found[want] = false
			}
		}
		return found, nil
	}
	for _, want := range names {
		ok, err := w.PipeExists(want)
		if err != nil {
			return nil, fmt.Errorf(`list \\.\pipe\ (%v), then probe \\.\pipe\%s: %w`, lerr, want, err)
		}
		found[want] = ok
	}
	return found, nil
}
