package winos

import (
	"debug/pe"
	"fmt"
	"runtime"

	"golang.org/x/sys/windows"
)

// Arch asks IsWow64Process2 for the native machine, which it reports
// even to a process under emulation. Windows before 1709 lacks the call;
// none of those runs on ARM64, so the agent's own architecture is the
// machine's there.
func (windowsOS) Arch() (string, error) {
	if isWow64Process2.Find() != nil {
		return runtime.GOARCH, nil
	}
	var process, native uint16
	if err := windows.IsWow64Process2(windows.CurrentProcess(), &process, &native); err != nil {
		return "", winErr("read the machine type", "this computer", err)
	}
	if arch := machineArch[native]; arch != "" {
		return arch, nil
	}
	return fmt.Sprintf("machine type %#x", native), nil
}

var isWow64Process2 = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsWow64Process2")

// machineArch names IMAGE_FILE_MACHINE_* values as GOARCH does.
var machineArch = map[uint16]string{
	pe.IMAGE_FILE_MACHINE_AMD64: "amd64",
	pe.IMAGE_FILE_MACHINE_ARM64: "arm64",
	pe.IMAGE_FILE_MACHINE_I386:  "386",
	pe.IMAGE_FILE_MACHINE_ARMNT: "arm",
}
