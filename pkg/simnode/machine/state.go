package machine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ServiceStatus is a Windows service state as Get-Service reports it.
type ServiceStatus string

// The service states simnode models.
const (
	StatusStopped      ServiceStatus = "Stopped"
	StatusStartPending ServiceStatus = "StartPending"
	StatusRunning      ServiceStatus = "Running"
	StatusStopPending  ServiceStatus = "StopPending"
)

// The error controls simnode models (SERVICE_ERROR_*).
const (
	ErrorControlIgnore = "Ignore"
	ErrorControlNormal = "Normal"
)

// StartType is a service's start mode as Get-Service reports it.
type StartType string

// The start types.
const (
	StartAutomatic StartType = "Automatic"
	StartManual    StartType = "Manual"
	StartDisabled  StartType = "Disabled"
)

// State is everything simnode remembers about the machine, saved to
// <StateDir>/state.json after every change. File contents live in
// <StateDir>/fs. Maps are keyed case-insensitively (lower-case keys) where
// Windows is case-insensitive.
type State struct {
	// Hostname is the computer name.
	Hostname string `json:"hostname"`
	// Arch is the processor architecture (arch.go): "" is amd64.
	Arch string `json:"arch,omitempty"`
	// Services by lower-case name.
	Services map[string]*Service `json:"services"`
	// Processes by PID: service processes and stand-alone ones such as
	// rancher-wins-*.exe started through wins.
	Processes map[int]*Process `json:"processes"`
	// NextPID is the PID the next process gets.
	NextPID int `json:"nextPID"`
	// ServicePipes says which named pipes a running service owns, by
	// lower-case service name (containerd -> containerd-containerd).
	ServicePipes map[string][]string `json:"servicePipes"`
	// ServicePorts says which TCP ports a running service listens on, by
	// lower-case service name (kubelet -> 10250, 10248).
	ServicePorts map[string][]int `json:"servicePorts"`
	// Registry maps a lower-case key path (HKLM:\...) to its values.
	Registry map[string]*RegistryKey `json:"registry"`
	// Firewall rules by lower-case rule name.
	Firewall map[string]*FirewallRule `json:"firewall"`
	// Chocolatey is the package manager's state.
	Chocolatey Chocolatey `json:"chocolatey"`
	// LanguageMode is PowerShell's language mode on the node: empty means
	// FullLanguage; "ConstrainedLanguage" plays a WDAC/AppLocker policy.
	LanguageMode string `json:"languageMode,omitempty"`
	// ACLs holds explicit access control lists by lower-case Windows path;
	// a path without a record inherits its parent's permissions.
	ACLs map[string]*ACL `json:"acls"`
	// Owners holds the owner of each file or folder a non-administrator
	// created, by lower-case Windows path; the rest belong to
	// Administrators.
	Owners map[string]string `json:"owners,omitempty"`
	// HyperV is set when the machine plays a Hyper-V host (hyperv.go).
	HyperV *HyperVHost `json:"hyperv,omitempty"`
	// Features are the Windows features' install states by lower-case
	// name (features.go); a feature without an entry is Available.
	Features map[string]string `json:"features,omitempty"`
	// PipeDelays say, by lower-case service name, how long after the
	// service reports Running its named pipes appear: containerd reports
	// Running before it has loaded its plugins and opened its pipe.
	PipeDelays map[string]time.Duration `json:"pipeDelays,omitempty"`
	// Boots are when the machine came up after each reboot (reboot.go).
	Boots []time.Time `json:"boots,omitempty"`
}

// Service is one Windows service.
type Service struct {
	Name        string `json:"name"`
	DisplayName string `json:"displayName"`
	// BinaryPath is the executable of the service's ImagePath.
	BinaryPath string `json:"binaryPath"`
	// Args are the arguments after the executable in ImagePath.
	Args         []string      `json:"args,omitempty"`
	StartType    StartType     `json:"startType"`
	Dependencies []string      `json:"dependencies,omitempty"`
	Status       ServiceStatus `json:"status"`
	// PID is the service process while it is not Stopped.
	PID          int `json:"pid,omitempty"`
	LastExitCode int `json:"lastExitCode"`
	// EventLog holds System event log lines about the service, oldest
	// first; EventTimes holds when each was written.
	EventLog   []string    `json:"eventLog,omitempty"`
	EventTimes []time.Time `json:"eventTimes,omitempty"`
	// Recovery are the failure actions (sc.exe failure): what the service
	// control manager does when the process exits without a stop control.
	Recovery *Recovery `json:"recovery,omitempty"`
	// Failures counts unexpected exits since the last reset, to pick the
	// recovery action; RestartAt is when a pending recovery restart fires.
	Failures  int       `json:"failures,omitempty"`
	RestartAt time.Time `json:"restartAt,omitzero"`
	// PendingUntil is when a StartPending or StopPending state ends.
	PendingUntil time.Time `json:"pendingUntil,omitzero"`
	// CrashAt is when a service whose binary holds SIMNODE-CRASH-ON-START
	// exits.
	CrashAt time.Time `json:"crashAt,omitzero"`
	// HangOnStop is set at start from the SIMNODE-HANG-ON-STOP marker: a
	// stop then stays StopPending until the process is killed.
	HangOnStop bool `json:"hangOnStop,omitempty"`
	// ExitOnStop is set at start from the SIMNODE-EXIT-ON-STOP marker: a
	// stop ends with the process exiting before it reports Stopped,
	// which the service control manager counts as a failure.
	ExitOnStop bool `json:"exitOnStop,omitempty"`
	// ShareGroup, when set, makes the service share one process with the
	// other running services of its group (an svchost.exe -k group).
	ShareGroup string `json:"shareGroup,omitempty"`
	// NoPipe is set at start from the SIMNODE-WINS-NO-PIPE marker: the
	// service runs without creating its pipes.
	NoPipe bool `json:"noPipe,omitempty"`
	// DeletePending is set when the service was deleted while running: it
	// goes away once stopped, as with sc.exe delete.
	DeletePending bool `json:"deletePending,omitempty"`
	// ErrorControl is what Windows does when the service fails to start
	// at boot (ErrorControlIgnore or ErrorControlNormal).
	ErrorControl string `json:"errorControl,omitempty"`
	// RunningSince is when the service last reported Running.
	RunningSince time.Time `json:"runningSince,omitzero"`
	// StartCount counts successful starts (useful in tests).
	StartCount int `json:"startCount"`
}

// Recovery is a service's failure actions.
type Recovery struct {
	// Actions apply to the first, second, ... failure; the last repeats.
	Actions []RecoveryAction `json:"actions"`
	// ResetPeriod is how long without failures resets the count.
	ResetPeriod time.Duration `json:"resetPeriod"`
}

// RecoveryAction is one failure action: "restart" or "none" after Delay.
type RecoveryAction struct {
	Type  string        `json:"type"`
	Delay time.Duration `json:"delay"`
}

// Process is a running process.
type Process struct {
	PID int `json:"pid"`
	// Image is the executable file the process runs. It follows renames
	// of that file, as the open handle does on NTFS, and stays locked.
	Image string `json:"image"`
	// CommandLine is what Win32_Process.CommandLine shows.
	CommandLine string `json:"commandLine"`
	// Service is the name of the service this process runs, if any.
	Service string `json:"service,omitempty"`
	// Parent is the process that started this one (0 for a service's
	// process); like Windows' ParentProcessId it outlives the parent.
	Parent int `json:"parent,omitempty"`
	// Started is when the process started.
	Started time.Time `json:"started"`
}

// RegistryKey is one registry key's values.
type RegistryKey struct {
	// Path is the key as first written, e.g. HKLM:\SOFTWARE\...
	Path string `json:"path"`
	// Values by lower-case value name.
	Values map[string]*RegistryValue `json:"values"`
}

// RegistryValue is one named value. Kind is "DWord", "QWord", "String",
// "ExpandString" or "MultiString"; numbers are in Number, strings in String
// (or Strings for MultiString).
type RegistryValue struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Number  int64    `json:"number,omitempty"`
	String  string   `json:"string,omitempty"`
	Strings []string `json:"strings,omitempty"`
}

// FirewallRule is a Windows Defender Firewall rule, addressed by name.
type FirewallRule struct {
	Name         string `json:"name"`
	DisplayName  string `json:"displayName"`
	DisplayGroup string `json:"displayGroup"`
	Direction    string `json:"direction"`
	Protocol     string `json:"protocol"`
	LocalPort    string `json:"localPort"`
	Enabled      bool   `json:"enabled"`
}

// Chocolatey is the Chocolatey package manager's state.
type Chocolatey struct {
	Installed bool `json:"installed"`
	// Version is choco's version once installed ("2.2.2"; set "1.4.0" to
	// play Chocolatey v1).
	Version string `json:"version,omitempty"`
	// InstallVersion is the version the install script installs.
	InstallVersion string `json:"installVersion"`
	// Packages installed, by lower-case name -> version.
	Packages map[string]string `json:"packages"`
	// Catalog is what the (simulated) community feed offers, by lower-case
	// name. A package not in it is "not found".
	Catalog map[string]ChocoPackage `json:"catalog"`
	// NetFxPending is set once the install script has installed .NET
	// Framework 4.8 (Chocolatey 2 needs it) on a node with an older one:
	// it takes effect at the next reboot (Node.Reboot), and until then
	// every install attempt ends asking for a reboot.
	NetFxPending bool `json:"netFxPending,omitempty"`
}

// ChocoPackage is a package on the simulated feed.
type ChocoPackage struct {
	Version string `json:"version"`
	// ExitCode is what choco install returns for it: 0, or 3010/1641
	// (success, reboot required).
	ExitCode int `json:"exitCode,omitempty"`
}

// Registry key paths simnode seeds.
const (
	KeyTerminalServer = `HKLM:\System\CurrentControlSet\Control\Terminal Server`
	KeyRDPTcp         = `HKLM:\System\CurrentControlSet\Control\Terminal Server\WinStations\RDP-Tcp`
	KeyCurrentVersion = `HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion`
)

// Paths simnode seeds or knows about.
const (
	PathAdminAuthorizedKeys = `C:\ProgramData\ssh\administrators_authorized_keys`
	PathChoco               = `C:\ProgramData\chocolatey\choco.exe`
	// ChocoDir is Chocolatey's default folder, where choco.exe is.
	ChocoDir = `C:\ProgramData\chocolatey`
)

// seedBinaries are the placeholder executables of the seeded services.
var seedServices = []Service{
	{Name: "containerd", DisplayName: "containerd container runtime", BinaryPath: `C:\Program Files\containerd\containerd.exe`,
		Args: []string{"--run-service"}, StartType: StartAutomatic, ErrorControl: ErrorControlNormal},
	{Name: "kubelet", DisplayName: "kubelet", BinaryPath: `C:\k\kubelet.exe`,
		Args: []string{"--windows-service", "--config=C:\\var\\lib\\kubelet\\config.yaml"}, StartType: StartAutomatic, Dependencies: []string{"containerd"}, ErrorControl: ErrorControlNormal},
	{Name: "kube-proxy", DisplayName: "kube-proxy", BinaryPath: `C:\k\kube-proxy.exe`,
		Args: []string{"--windows-service", "--proxy-mode=kernelspace"}, StartType: StartAutomatic, Dependencies: []string{"kubelet"}, ErrorControl: ErrorControlNormal},
}

// newSeedState returns a fresh Windows Server 2022 VM: RDP off, no
// Chocolatey, containerd, kubelet and kube-proxy running with the
// Containers feature installed (none of them when bare: a VM with only
// OpenSSH, before swdt join, whose Containers feature is Available as on
// a fresh install), no wins.
func newSeedState(hostname string, bare bool, now time.Time) *State {
	s := &State{
		Hostname:  hostname,
		Services:  map[string]*Service{},
		Processes: map[int]*Process{},
		NextPID:   1204,
		ServicePipes: map[string][]string{
			"containerd":   {"containerd-containerd"},
			"rancher-wins": {"rancher_wins", "rancher_wins_proxy"},
		},
		ServicePorts: map[string][]int{
			"kubelet":    {10250, 10248},
			"kube-proxy": {10256, 10249},
		},
		Registry: map[string]*RegistryKey{},
		Firewall: map[string]*FirewallRule{},
		ACLs:     map[string]*ACL{},
		Owners:   map[string]string{},
		Chocolatey: Chocolatey{
			InstallVersion: "2.2.2",
			Packages:       map[string]string{},
			Catalog: map[string]ChocoPackage{
				"vim": {Version: "9.1.0"}, "grep": {Version: "2.1032"}, "git": {Version: "2.43.0"},
				"7zip": {Version: "23.1.0"}, "curl": {Version: "8.5.0"}, "wget": {Version: "1.21.4"},
				"jq": {Version: "1.7.1"}, "nssm": {Version: "2.24.101"}, "golang": {Version: "1.21.6"},
				"make": {Version: "4.4.1"}, "sysinternals": {Version: "2024.1.10"}, "kubernetes-cli": {Version: "1.29.1"},
				"notepadplusplus": {Version: "8.6.2"}, "procexp": {Version: "17.5"}, "windbg": {Version: "10.0.10586"},
				"dotnetfx":    {Version: "4.8.0.20220524", ExitCode: 3010},
				"vcredist140": {Version: "14.38.33135", ExitCode: 1641},
			},
		},
	}
	setReg := func(key, name, kind string, num int64, str string) {
		k := s.Registry[strings.ToLower(key)]
		if k == nil {
			k = &RegistryKey{Path: key, Values: map[string]*RegistryValue{}}
			s.Registry[strings.ToLower(key)] = k
		}
		k.Values[strings.ToLower(name)] = &RegistryValue{Name: name, Kind: kind, Number: num, String: str}
	}
	setReg(KeyTerminalServer, "fDenyTSConnections", "DWord", 1, "")
	setReg(KeyRDPTcp, "UserAuthentication", "DWord", 1, "")
	setReg(KeyRDPTcp, "PortNumber", "DWord", 3389, "")
	setReg(KeyCurrentVersion, "CurrentMajorVersionNumber", "DWord", 10, "")
	setReg(KeyCurrentVersion, "CurrentMinorVersionNumber", "DWord", 0, "")
	setReg(KeyCurrentVersion, "CurrentBuildNumber", "String", 0, "20348")
	setReg(KeyCurrentVersion, "CurrentBuild", "String", 0, "20348")
	setReg(KeyCurrentVersion, "UBR", "DWord", 2227, "")
	setReg(KeyCurrentVersion, "ReleaseId", "String", 0, "2009")
	setReg(KeyCurrentVersion, "DisplayVersion", "String", 0, "21H2")
	setReg(KeyCurrentVersion, "BuildLabEx", "String", 0, "20348.1.amd64fre.fe_release.210507-1500")
	setReg(KeyCurrentVersion, "ProductName", "String", 0, "Windows Server 2022 Datacenter")
	setReg(KeyCurrentVersion, "EditionID", "String", 0, "ServerDatacenter")
	setReg(KeyCurrentVersion, "InstallationType", "String", 0, "Server")
	setReg(KeyNetFx4, "Release", "DWord", NetFx48Server2022, "")
	setReg(KeyPowerShellEngine, "PowerShellVersion", "String", 0, "5.1.20348.1")

	for _, r := range []FirewallRule{
		{Name: "RemoteDesktop-UserMode-In-TCP", DisplayName: "Remote Desktop - User Mode (TCP-In)", Protocol: "TCP", LocalPort: "3389"},
		{Name: "RemoteDesktop-UserMode-In-UDP", DisplayName: "Remote Desktop - User Mode (UDP-In)", Protocol: "UDP", LocalPort: "3389"},
		{Name: "RemoteDesktop-Shadow-In-TCP", DisplayName: "Remote Desktop - Shadow (TCP-In)", Protocol: "TCP", LocalPort: "Any"},
	} {
		r.DisplayGroup = "Remote Desktop"
		r.Direction = "Inbound"
		s.Firewall[strings.ToLower(r.Name)] = &r
	}
	s.Firewall["openssh-server-in-tcp"] = &FirewallRule{Name: "OpenSSH-Server-In-TCP", DisplayName: "OpenSSH SSH Server (sshd)",
		DisplayGroup: "OpenSSH Server", Direction: "Inbound", Protocol: "TCP", LocalPort: "22", Enabled: true}

	for _, svc := range seedServices {
		if bare {
			break
		}
		svc := svc
		svc.Dependencies = append([]string(nil), svc.Dependencies...)
		svc.Args = append([]string(nil), svc.Args...)
		svc.Status = StatusRunning
		svc.StartCount = 1
		s.Services[strings.ToLower(svc.Name)] = &svc
		s.spawn(&svc, now)
	}
	seedSharedServices(s, now, !bare)
	if bare {
		s.Features = map[string]string{"containers": FeatureAvailable}
		return s
	}
	s.Features = map[string]string{"containers": FeatureInstalled}
	vmcompute := containerServices()[0]
	vmcompute.Status, vmcompute.StartCount = StatusRunning, 1
	s.Services[strings.ToLower(vmcompute.Name)] = vmcompute
	s.spawn(vmcompute, now)
	return s
}

// seedFiles are the files of a fresh VM, written below fs/ on first start;
// a bare one has no Kubernetes files.
func seedFiles(bare bool) map[string]string {
	files := map[string]string{
		`C:\Windows\System32\cmd.exe`:             "simnode placeholder cmd.exe\r\n",
		`C:\Windows\System32\whoami.exe`:          "simnode placeholder whoami.exe\r\n",
		`C:\Windows\System32\hostname.exe`:        "simnode placeholder hostname.exe\r\n",
		`C:\Windows\System32\sc.exe`:              "simnode placeholder sc.exe\r\n",
		`C:\Windows\System32\timeout.exe`:         "simnode placeholder timeout.exe\r\n",
		`C:\Windows\System32\shutdown.exe`:        "simnode placeholder shutdown.exe\r\n",
		PathSvchost:                               "MZ simnode placeholder svchost.exe\r\n",
		`C:\ProgramData\ssh\sshd_config`:          "# simnode: sshd_config of Windows OpenSSH\r\nAuthorizedKeysFile .ssh/authorized_keys\r\nSubsystem sftp sftp-server.exe\r\nMatch Group administrators\r\n       AuthorizedKeysFile __PROGRAMDATA__/ssh/administrators_authorized_keys\r\n",
		`C:\var\lib\kubelet\config.yaml`:          "kind: KubeletConfiguration\r\napiVersion: kubelet.config.k8s.io/v1beta1\r\n",
		`C:\Program Files\containerd\config.toml`: "version = 2\r\n[grpc]\r\n  address = \"\\\\\\\\.\\\\pipe\\\\containerd-containerd\"\r\n",
	}
	if !bare {
		files[PathVMCompute] = "MZ simnode placeholder vmcompute.exe\r\n"
	}
	if bare {
		delete(files, `C:\var\lib\kubelet\config.yaml`)
		delete(files, `C:\Program Files\containerd\config.toml`)
		return files
	}
	for _, svc := range seedServices {
		files[svc.BinaryPath] = fmt.Sprintf("MZ simnode placeholder %s\r\nThis is not a real Windows executable; simnode only reads it for markers.\r\n%s\r\n",
			svc.Name, strings.Repeat("-", 256))
	}
	return files
}

// seedDirs are empty directories of a fresh VM.
var seedDirs = []string{`C:\Users\Administrator`, `C:\Users\Public`, `C:\Windows\Temp`, `C:\ProgramData`, `C:\etc`, `C:\Program Files`, `C:\Program Files (x86)`}

// spawn gives svc a new process.
func (s *State) spawn(svc *Service, now time.Time) {
	if pid := s.sharedHost(svc); pid != 0 {
		svc.PID = pid
		return
	}
	pid := s.NextPID
	s.NextPID += 4
	cmd := `"` + svc.BinaryPath + `"`
	if len(svc.Args) > 0 {
		cmd += " " + strings.Join(svc.Args, " ")
	}
	s.Processes[pid] = &Process{PID: pid, Image: svc.BinaryPath, CommandLine: cmd, Service: svc.Name, Started: now}
	svc.PID = pid
}

// clone returns a deep copy (via JSON: the state is small).
func (s *State) clone() *State {
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("simnode: marshal state: %v", err))
	}
	var c State
	if err := json.Unmarshal(raw, &c); err != nil {
		panic(fmt.Sprintf("simnode: unmarshal state: %v", err))
	}
	return &c
}

// loadState reads state.json, or returns nil when there is none.
func loadState(path string) (*State, error) {
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var s State
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("decode state %s: %w", path, err)
	}
	if s.Services == nil {
		s.Services = map[string]*Service{}
	}
	if s.Processes == nil {
		s.Processes = map[int]*Process{}
	}
	if s.Registry == nil {
		s.Registry = map[string]*RegistryKey{}
	}
	if s.Firewall == nil {
		s.Firewall = map[string]*FirewallRule{}
	}
	if s.ACLs == nil {
		s.ACLs = map[string]*ACL{}
	}
	if s.Owners == nil {
		s.Owners = map[string]string{}
	}
	if s.ServicePorts == nil {
		s.ServicePorts = map[string][]int{}
	}
	if s.ServicePipes == nil {
		s.ServicePipes = map[string][]string{}
	}
	if s.Chocolatey.Packages == nil {
		s.Chocolatey.Packages = map[string]string{}
	}
	return &s, nil
}

// saveState writes state.json atomically.
func saveState(path string, s *State) error {
	raw, err := encodeState(s)
	if err != nil {
		return err
	}
	return writeState(path, raw)
}

// encodeState is state.json's content: compact, since a machine saves it
// after every change (a swap saves it about twenty times) and indenting
// took two thirds of each save; jq shows it indented.
func encodeState(s *State) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode state: %w", err)
	}
	return raw, nil
}

// writeState replaces the file at path with raw atomically.
func writeState(path string, raw []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

func stateFile(dir string) string { return filepath.Join(dir, "state.json") }

// SeedBare writes a new bare state (a VM with only OpenSSH) in dir unless
// dir already holds one, without seeding any file: the Wine mode's
// machine, whose C: drive and services are Wine's.
func SeedBare(dir, hostname string) error {
	if _, err := os.Stat(stateFile(dir)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return saveState(stateFile(dir), newSeedState(hostname, true, time.Now()))
}
