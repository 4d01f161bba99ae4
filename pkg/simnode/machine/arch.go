package machine

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// The processor architectures simnode plays, as GOARCH names.
const (
	ArchAMD64 = "amd64"
	ArchARM64 = "arm64"
)

// ARM32Folder holds the ARM32 system files that Windows for ARM64 has and
// Windows for x64 lacks: swdt looks for it to pick the agent it uploads
// before any agent runs, so it follows the machine's architecture.
const ARM32Folder = `C:\Windows\SysArm32`

// ParseArch checks a --arch value.
func ParseArch(s string) (string, error) {
	switch s {
	case ArchAMD64, ArchARM64:
		return s, nil
	}
	return "", fmt.Errorf("%q is not an architecture simnode plays (amd64, arm64)", s)
}

// Arch is the machine's processor architecture, as the agent's
// IsWow64Process2 reports it.
func (n *Node) Arch() string {
	arch := ArchAMD64
	n.m.view(func(s *State, _ time.Time) {
		if s.Arch != "" {
			arch = s.Arch
		}
	})
	return arch
}

// SetArch makes the machine one of architecture arch (amd64 or arm64),
// with ARM32Folder on ARM64 only, as a VM of another kind would be.
func (n *Node) SetArch(arch string) error { return n.m.setArch(arch) }

func (m *Machine) setArch(arch string) error {
	if _, err := ParseArch(arch); err != nil {
		return err
	}
	return m.update(func(s *State, _ time.Time) error {
		s.Arch = arch
		w, _ := ntfs.ParsePath(ARM32Folder)
		host := m.hostPathNoResolve(w)
		if arch == ArchARM64 {
			return os.MkdirAll(host, 0o755)
		}
		if err := os.Remove(host); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove %s: %w", ARM32Folder, err)
		}
		return nil
	})
}
