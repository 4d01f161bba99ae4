package machine

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// How real nodes install kubelet, and what that means for its processes.
//
// sig-windows-tools' PrepareNode.ps1 (what the Vagrant sig-windows-dev-tools
// and most guides use) runs `nssm install kubelet powershell.exe
// -ExecutionPolicy Bypass -NoProfile C:\k\StartKubelet.ps1`, and that
// script starts C:\k\kubelet.exe with Invoke-Expression: the service's
// process is nssm.exe, its child powershell.exe, and kubelet.exe is a
// grandchild. nssm ends its whole tree only on an orderly stop (the stop
// control); TerminateProcess ends the one process it is given, so killing
// nssm leaves powershell.exe and kubelet.exe running, orphaned, with the
// binary still open. simnode models exactly that: a service whose program
// is nssm.exe starts Parameters\Application as its child (and a
// PowerShell child the first X:\...\*.exe its .ps1 argument names);
// an orderly stop or a crash ends the tree, KillProcess one process.

// KubeletSetup is how the seeded kubelet service runs C:\k\kubelet.exe.
type KubeletSetup string

// The ways real nodes install kubelet.
const (
	// KubeletSC is `sc.exe create kubelet binPath= "C:\k\kubelet.exe
	// --windows-service ..."`: the service's process is kubelet.exe (the
	// seed's default).
	KubeletSC KubeletSetup = "sc"
	// KubeletNSSM is `nssm install kubelet C:\k\kubelet.exe ...`: nssm.exe
	// runs kubelet.exe as its child.
	KubeletNSSM KubeletSetup = "nssm"
	// KubeletNSSMPowerShell is PrepareNode.ps1's `nssm install kubelet
	// powershell.exe ... C:\k\StartKubelet.ps1`: nssm.exe runs
	// powershell.exe, which runs kubelet.exe.
	KubeletNSSMPowerShell KubeletSetup = "nssm-powershell"
)

// Paths of the wrapped setups (PrepareNode.ps1 installs nssm below
// Program Files).
const (
	PathNSSM         = `C:\Program Files\nssm\nssm.exe`
	PathPowerShell   = `C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe`
	PathStartKubelet = `C:\k\StartKubelet.ps1`
)

// ParseKubeletSetup checks a --kubelet-setup value.
func ParseKubeletSetup(s string) (KubeletSetup, error) {
	switch k := KubeletSetup(s); k {
	case KubeletSC, KubeletNSSM, KubeletNSSMPowerShell:
		return k, nil
	}
	return "", fmt.Errorf("unknown kubelet setup %q: want sc, nssm or nssm-powershell", s)
}

// nssmParameters is the registry key nssm keeps a service's program in.
func nssmParameters(service string) string {
	return `HKLM:\SYSTEM\CurrentControlSet\Services\` + service + `\Parameters`
}

// kubeletArgs are the arguments kubelet runs with under every setup
// (--windows-service only when the service control manager talks to
// kubelet itself).
const kubeletArgs = `--config=C:\var\lib\kubelet\config.yaml`

// startKubeletScript is what PrepareNode.ps1 writes to StartKubelet.ps1
// (shortened to what matters: it builds kubelet's command line and runs
// it with Invoke-Expression).
const startKubeletScript = "$FileContent = Get-Content -Path \"$env:SYSTEMDRIVE\\var\\lib\\kubelet\\kubeadm-flags.env\"\r\n" +
	"$global:KubeletArgs = $FileContent.TrimStart('KUBELET_KUBEADM_ARGS=').Trim('\"')\r\n" +
	"$cmd = \"C:\\k\\kubelet.exe $global:KubeletArgs " + kubeletArgs + "\"\r\n" +
	"Invoke-Expression $cmd\r\n"

// setKubeletSetup makes the kubelet service run the setup's way, with its
// files and nssm's registry values, keeping its status: a running kubelet
// is stopped (its whole tree) and started again the new way.
func (m *Machine) setKubeletSetup(k KubeletSetup) error {
	files := map[string]string{}
	switch k {
	case KubeletNSSM:
		files[PathNSSM] = "MZ simnode placeholder nssm.exe (the Non-Sucking Service Manager 2.24)\r\n"
	case KubeletNSSMPowerShell:
		files[PathNSSM] = "MZ simnode placeholder nssm.exe (the Non-Sucking Service Manager 2.24)\r\n"
		files[PathPowerShell] = "MZ simnode placeholder powershell.exe\r\n"
		files[PathStartKubelet] = startKubeletScript
	}
	for p, content := range files {
		w, _ := ntfs.ParsePath(p)
		host := m.hostPathNoResolve(w)
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			return fmt.Errorf("kubelet setup %s: %w", k, err)
		}
		if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
			return fmt.Errorf("kubelet setup %s: %w", k, err)
		}
	}
	return m.update(func(s *State, now time.Time) error {
		svc := s.Services["kubelet"]
		if svc == nil {
			return fmt.Errorf("kubelet setup %s: the node has no kubelet service", k)
		}
		running := svc.Status != StatusStopped
		if running {
			m.terminateLocked(svc, now, 0, "")
		}
		delete(s.Registry, strings.ToLower(nssmParameters(svc.Name)))
		set := func(name, value string) {
			key := nssmParameters(svc.Name)
			rk := s.Registry[strings.ToLower(key)]
			if rk == nil {
				rk = &RegistryKey{Path: key, Values: map[string]*RegistryValue{}}
				s.Registry[strings.ToLower(key)] = rk
			}
			rk.Values[strings.ToLower(name)] = &RegistryValue{Name: name, Kind: "ExpandString", String: value}
		}
		switch k {
		case KubeletSC:
			svc.BinaryPath, svc.Args = `C:\k\kubelet.exe`, []string{"--windows-service", kubeletArgs}
		case KubeletNSSM:
			svc.BinaryPath, svc.Args = PathNSSM, nil
			set("Application", `C:\k\kubelet.exe`)
			set("AppParameters", kubeletArgs)
		case KubeletNSSMPowerShell:
			svc.BinaryPath, svc.Args = PathNSSM, nil
			set("Application", PathPowerShell)
			set("AppParameters", `-ExecutionPolicy Bypass -NoProfile `+PathStartKubelet)
		}
		if running {
			if _, err := m.startLocked(svc.Name, now, map[string]bool{}); err != nil {
				return fmt.Errorf("kubelet setup %s: start kubelet: %w", k, err)
			}
			svc.Status, svc.PendingUntil = StatusRunning, time.Time{}
		}
		return nil
	})
}

// scriptExe finds the first absolute path of an executable in a script.
var scriptExe = regexp.MustCompile(`(?i)[a-z]:\\[^"'\s$;|]*\.exe`)

// wrappedChainLocked is what a service's process runs below it: for a
// service whose program is kube-log-runner.exe, the program it runs (with
// its arguments); for one whose program is nssm.exe, nssm's Application (with its
// AppParameters) and, when that is PowerShell running a script, the
// first executable the script names. Each entry is an image and its
// command line; an image that does not exist ends the chain there (nssm
// keeps retrying it; the service stays Running).
func (m *Machine) wrappedChainLocked(svc *Service) [][2]string {
	if isLogRunner(svc.BinaryPath) {
		_, program, args := splitLogRunner(svc.Args)
		canon, ok := m.existingLocked(program)
		if !ok {
			return nil
		}
		return [][2]string{{canon, strings.TrimSpace(`"` + canon + `" ` + strings.Join(args, " "))}}
	}
	if !strings.EqualFold(winpath.Base(svc.BinaryPath), "nssm.exe") {
		return nil
	}
	k := m.st.Registry[strings.ToLower(nssmParameters(svc.Name))]
	if k == nil || k.Values["application"] == nil {
		return nil
	}
	app := k.Values["application"].String
	params := ""
	if v := k.Values["appparameters"]; v != nil {
		params = v.String
	}
	var chain [][2]string
	canonApp, ok := m.existingLocked(app)
	if !ok {
		return nil
	}
	chain = append(chain, [2]string{canonApp, strings.TrimSpace(`"` + canonApp + `" ` + params)})
	if b := strings.ToLower(winpath.Base(app)); b != "powershell.exe" && b != "pwsh.exe" {
		return chain
	}
	for _, arg := range strings.Fields(params) {
		if !strings.HasSuffix(strings.ToLower(arg), ".ps1") {
			continue
		}
		w, err := ntfs.ParsePath(arg)
		if err != nil {
			break
		}
		host, _, err := ntfs.Resolve(m.fsRoot, w)
		if err != nil {
			break
		}
		script, err := os.ReadFile(host)
		if err != nil {
			break
		}
		exe := scriptExe.FindString(string(script))
		if canon, ok := m.existingLocked(exe); exe != "" && ok {
			chain = append(chain, [2]string{canon, `"` + canon + `" ` + kubeletArgs})
		}
		break
	}
	return chain
}

// existingLocked is p's canonical spelling when it is an existing file.
func (m *Machine) existingLocked(p string) (string, bool) {
	w, err := ntfs.ParsePath(p)
	if err != nil {
		return "", false
	}
	host, canon, err := ntfs.Resolve(m.fsRoot, w)
	if err != nil {
		return "", false
	}
	if fi, err := os.Stat(host); err != nil || fi.IsDir() {
		return "", false
	}
	return string(canon), true
}

// spawnWrappedLocked starts the processes below a wrapper service's
// process (see wrappedChainLocked), each the child of the one before.
func (m *Machine) spawnWrappedLocked(svc *Service, now time.Time) {
	parent := svc.PID
	for _, c := range m.wrappedChainLocked(svc) {
		pid := m.st.NextPID
		m.st.NextPID += 4
		m.st.Processes[pid] = &Process{PID: pid, Parent: parent, Image: c[0], CommandLine: c[1], Started: now}
		parent = pid
	}
}

// wrappedMarkersLocked adds the markers of the programs a wrapper runs to
// found (a copy is returned; found is the marker cache's): a hang or a
// crash is the wrapped program's.
func (m *Machine) wrappedMarkersLocked(svc *Service, found map[string]bool) map[string]bool {
	chain := m.wrappedChainLocked(svc)
	if len(chain) == 0 {
		return found
	}
	out := map[string]bool{}
	for k, v := range found {
		out[k] = v
	}
	for _, c := range chain {
		w, _ := ntfs.ParsePath(c[0])
		host, _, err := ntfs.Resolve(m.fsRoot, w)
		if err != nil {
			continue
		}
		more, err := m.vol.ScanMarkersLocked(host)
		if err != nil {
			continue
		}
		for k, v := range more {
			out[k] = out[k] || v
		}
	}
	return out
}

// endWrappedLocked ends the processes below a wrapper service's process
// as it ends (nssm ends its application's tree on a stop, and when its
// application crashes; kube-log-runner's child is the service's program:
// it stops with the service, and kube-log-runner ends with it). Other services' children live on: containerd's
// shims keep containers running across its restarts.
func (m *Machine) endWrappedLocked(svc *Service) {
	if strings.EqualFold(winpath.Base(svc.BinaryPath), "nssm.exe") || isLogRunner(svc.BinaryPath) {
		m.endTreeLocked(svc.PID)
	}
}

// endTreeLocked ends every process below pid.
func (m *Machine) endTreeLocked(pid int) {
	if pid == 0 {
		return
	}
	for _, p := range m.st.Processes {
		if p.Parent == pid {
			m.endTreeLocked(p.PID)
			m.vol.ProcessEndedLocked(p.Image, m.now())
			delete(m.st.Processes, p.PID)
		}
	}
}
