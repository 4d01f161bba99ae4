//go:build !windows

package vm

import (
	"fmt"
	"runtime"
)

// localHyperV is this machine as the Hyper-V host, which only Windows can
// be: elsewhere it is a usage error saying to set spec.vm.hyperv.host.
func localHyperV(v *hypervVM) (hypervHost, error) {
	return nil, usage(fmt.Errorf("%s: spec.vm.hyperv.host is empty, which means this machine, but swdt runs on %s: set it to the SSH address of the Hyper-V host", v.Describe(), runtime.GOOS))
}
