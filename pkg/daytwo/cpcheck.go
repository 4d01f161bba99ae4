package daytwo

import (
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/internal/binfmt"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/target"
)

// checkProgram refuses to copy src to dst on the node when dst is a
// program (it ends in .exe, or the node file swaps a service's binary
// there) and src cannot run on the node: a program for another OS, or a
// PE image for another architecture than the node's (its facts, asked
// once per copy).
func (c *copier) checkProgram(src, dst string) error {
	if !c.isProgram(dst) {
		return nil
	}
	if c.arch == "" {
		facts, err := c.n.Facts(c.ctx)
		if err != nil {
			return fmt.Errorf("read the node's architecture to check %s: %w", src, err)
		}
		c.arch = facts.Arch
	}
	err := binfmt.CheckWindows(src, c.arch)
	var nw *binfmt.NotForWindowsError
	if errors.As(err, &nw) {
		nw.Path = src
		return exitcode.WithCode(exitcode.Usage, fmt.Errorf("%w; %s was not copied", nw, dst))
	}
	return nil
}

// isProgram reports whether dst on the node is a program: an .exe, or a
// binary the node file puts into a service.
func (c *copier) isProgram(dst string) bool {
	if strings.HasSuffix(strings.ToLower(dst), ".exe") {
		return true
	}
	for _, b := range target.Provisioners(c.spec) {
		if winpath.Equal(b.Destination, dst) {
			return true
		}
	}
	return c.spec.Spec.Wins != nil && winpath.Equal(target.WinsDestination(c.spec.Spec.Wins), dst)
}
