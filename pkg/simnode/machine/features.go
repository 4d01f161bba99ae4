package machine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// Windows features (Get-WindowsFeature, Install-WindowsFeature). A fresh
// Windows Server has the Containers feature Available, not Installed:
// installing it asks for a reboot (InstallPending until then), and only
// the boot after it brings the Host Compute Service (vmcompute) and the
// Host Network Service (hns), which containerd's runhcs shim and the CNI
// plugins need. sig-windows-tools' Install-Containerd.ps1 installs it and
// reboots before it installs containerd.

// The states of a feature, as Get-WindowsFeature's InstallState names
// them.
const (
	FeatureAvailable      = "Available"
	FeatureInstallPending = "InstallPending"
	FeatureInstalled      = "Installed"
)

// PathVMCompute is the Host Compute Service's program.
const PathVMCompute = `C:\Windows\System32\vmcompute.exe`

// knownFeatures are the features simnode models, by lower-case name:
// Containers, which containers need.
var knownFeatures = map[string]bool{"containers": true}

// Feature returns a feature's install state; an unknown name is an error
// of kind "not-found", as Get-WindowsFeature finds nothing.
func (n *Node) Feature(name string) (string, error) {
	var out string
	var err error
	n.m.view(func(s *State, _ time.Time) { out, err = featureLocked(s, name) })
	return out, err
}

func featureLocked(s *State, name string) (string, error) {
	key := strings.ToLower(name)
	if !knownFeatures[key] {
		return "", Fail(ops.KindNotFound, "ArgumentException: The role, role service, or feature name is not valid: '%s'. The name was not found.", name)
	}
	if st := s.Features[key]; st != "" {
		return st, nil
	}
	return FeatureAvailable, nil
}

// InstallFeature plays Install-WindowsFeature: an Available feature
// becomes InstallPending until the next reboot (restartNeeded); one
// pending or installed is left as it is.
func (n *Node) InstallFeature(name string) (restartNeeded bool, err error) {
	err = n.m.update(func(s *State, _ time.Time) error {
		st, err := featureLocked(s, name)
		if err != nil {
			return err
		}
		if st == FeatureInstalled {
			return nil
		}
		if s.Features == nil {
			s.Features = map[string]string{}
		}
		s.Features[strings.ToLower(name)] = FeatureInstallPending
		restartNeeded = true
		return nil
	})
	return restartNeeded, err
}

// finishFeaturesLocked completes, at boot, the features that waited for
// it: Containers registers vmcompute and hns, which then start with the
// other Automatic services.
func (m *Machine) finishFeaturesLocked(s *State) {
	for key, st := range s.Features {
		if st != FeatureInstallPending {
			continue
		}
		s.Features[key] = FeatureInstalled
		if key == "containers" {
			if err := m.installContainersLocked(s); err != nil {
				m.log.Error("install the Containers feature", "err", err)
			}
		}
	}
}

// installContainersLocked puts the Host Compute Service's program on the
// drive and registers vmcompute and hns, stopped.
func (m *Machine) installContainersLocked(s *State) error {
	w, _ := ntfs.ParsePath(PathVMCompute)
	host := m.hostPathNoResolve(w)
	if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(host), err)
	}
	if err := os.WriteFile(host, []byte("MZ simnode placeholder vmcompute.exe\r\n"), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", PathVMCompute, err)
	}
	for _, svc := range containerServices() {
		if s.Services[strings.ToLower(svc.Name)] == nil {
			s.Services[strings.ToLower(svc.Name)] = svc
		}
	}
	return nil
}

// containerServices are the services the Containers feature brings,
// stopped: the Host Compute Service in its own process, the Host Network
// Service in the netsvcs svchost.
func containerServices() []*Service {
	return []*Service{
		{Name: "vmcompute", DisplayName: "Hyper-V Host Compute Service", BinaryPath: PathVMCompute, StartType: StartAutomatic, Status: StatusStopped, ErrorControl: ErrorControlNormal},
		{Name: "hns", DisplayName: "Host Network Service", BinaryPath: PathSvchost, Args: []string{"-k", "netsvcs", "-p"}, ShareGroup: "netsvcs",
			StartType: StartAutomatic, Status: StatusStopped, ErrorControl: ErrorControlNormal},
	}
}
