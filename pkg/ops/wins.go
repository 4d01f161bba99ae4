package ops

import "time"

// Ops of `swdt wins` (DESIGN.md §5). The binary itself is swapped with the
// hot-swap ops; these cover wins' config, service registration, orphaned
// host processes and the bridge verification.
var (
	// WinsInspect reads the wins service, config file and orphaned
	// rancher-wins-* host processes.
	WinsInspect = register[WinsInspectRequest, WinsInspectResponse]("wins-inspect")
	// WinsConfigWrite writes wins' config file when its content differs,
	// keeping the previous file as a backup.
	WinsConfigWrite = register[WinsConfigWriteRequest, WinsConfigWriteResponse]("wins-config-write")
	// WinsRegister registers (or unregisters) the rancher-wins service with
	// wins.exe srv app run --register (--unregister).
	WinsRegister = register[WinsRegisterRequest, WinsRegisterResponse]("wins-register")
	// WinsOrphansStop stops rancher-wins-* processes that wins started on
	// the host, which lock their binaries.
	WinsOrphansStop = register[WinsOrphansStopRequest, WinsOrphansStopResponse]("wins-orphans-stop")
	// WinsVerify checks the bridge end to end.
	WinsVerify = register[WinsVerifyRequest, WinsVerifyResponse]("wins-verify")
	// WinsUninstall stops and unregisters the service and removes the
	// binary and config (the config is kept as a backup).
	WinsUninstall = register[WinsUninstallRequest, WinsUninstallResponse]("wins-uninstall")
)

// Wins facts (DESIGN.md §5).
const (
	// WinsService is the service name wins registers.
	WinsService = "rancher-wins"
	// WinsPipe is the gRPC pipe; WinsProxyPipe the TCP proxy pipe.
	WinsPipe      = "rancher_wins"
	WinsProxyPipe = "rancher_wins_proxy"
	// WinsProcessPrefix starts the names of processes wins runs on the host.
	WinsProcessPrefix = "rancher-wins-"
)

// Process is one host process.
type Process struct {
	PID         int    `json:"pid"`
	Name        string `json:"name"`
	Path        string `json:"path"`
	CommandLine string `json:"commandLine"`
	// Started is when it was created (zero when unknown).
	Started time.Time `json:"started,omitzero"`
}

// WinsInspectRequest names wins' files.
type WinsInspectRequest struct {
	// ConfigPath is wins' config file.
	ConfigPath string `json:"configPath"`
}

// WinsInspectResponse is wins' current state.
type WinsInspectResponse struct {
	Service ServiceInfo `json:"service"`
	// ConfigExists is true when the config file exists; ConfigContent is
	// its text.
	ConfigExists  bool   `json:"configExists"`
	ConfigContent string `json:"configContent"`
	// Orphans are running rancher-wins-* processes.
	Orphans []Process `json:"orphans"`
}

// WinsConfigWriteRequest carries the config file's desired content.
type WinsConfigWriteRequest struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// WinsConfigWriteResponse says whether the file changed.
type WinsConfigWriteResponse struct {
	Changed bool `json:"changed"`
	// Backup is where the previous content was kept ("" when there was
	// none or nothing changed).
	Backup string `json:"backup"`
	// Notes say what was repaired (wins' folder was not safe).
	Notes []string `json:"notes,omitempty"`
}

// WinsRegisterRequest names the binary and the direction.
type WinsRegisterRequest struct {
	Binary string `json:"binary"`
	// ConfigPath, when set, is registered as the service's --config, so
	// that a wins placed outside C:\etc\rancher\wins reads the config
	// swdt wrote beside it (wins keeps the flags it was registered with).
	ConfigPath string `json:"configPath,omitempty"`
	Unregister bool   `json:"unregister"`
}

// WinsRegisterResponse reports the service afterwards.
type WinsRegisterResponse struct {
	// Registered is true when the service exists afterwards.
	Registered bool `json:"registered"`
	// Output is wins.exe's output.
	Output string `json:"output"`
}

// WinsOrphansStopRequest takes no parameters.
type WinsOrphansStopRequest struct{}

// WinsOrphansStopResponse lists what was stopped.
type WinsOrphansStopResponse struct {
	Stopped []Process `json:"stopped"`
}

// WinsVerifyRequest says what to check.
type WinsVerifyRequest struct {
	// Binary is wins.exe, used as the pipe client.
	Binary string `json:"binary"`
	// Deep also runs a whitelisted copy of hostname.exe through the pipe.
	Deep bool `json:"deep"`
	// SmokePath is where the copy is placed; it must be whitelisted.
	SmokePath string `json:"smokePath"`
}

// WinsCheck is one check's outcome as measured on the node.
type WinsCheck struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// WinsVerifyResponse is what the node saw.
type WinsVerifyResponse struct {
	Service ServiceInfo `json:"service"`
	// Pipes maps pipe name to whether it exists.
	Pipes map[string]bool `json:"pipes"`
	// GetVersion is wins cli hst get-version's parsed output (empty when
	// it failed, with GetVersionError saying why).
	GetVersion      map[string]any `json:"getVersion"`
	GetVersionError string         `json:"getVersionError"`
	// Registry holds the same values read directly from the host's
	// HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion.
	Registry map[string]any `json:"registry"`
	// Deep is the whitelisted process run (when asked for).
	Deep *WinsDeepResult `json:"deep,omitempty"`
}

// WinsDeepResult is the outcome of running a process through the bridge.
type WinsDeepResult struct {
	OK bool `json:"ok"`
	// Output is what the process printed through the pipe.
	Output string `json:"output"`
	// Expected is what it should have printed (the hostname).
	Expected string `json:"expected"`
	// Error says what failed.
	Error string `json:"error,omitempty"`
	// Leftovers lists processes or files that could not be cleaned up.
	Leftovers []string `json:"leftovers"`
}

// WinsVersionKeys are the registry values get-version reports.
var WinsVersionKeys = []string{"CurrentMajorVersionNumber", "CurrentMinorVersionNumber", "CurrentBuildNumber", "UBR", "ReleaseId", "BuildLabEx", "CurrentBuild"}

// WinsUninstallRequest names wins' files.
type WinsUninstallRequest struct {
	Binary     string `json:"binary"`
	ConfigPath string `json:"configPath"`
}

// WinsUninstallResponse reports what was removed.
type WinsUninstallResponse struct {
	ServiceRemoved bool     `json:"serviceRemoved"`
	Removed        []string `json:"removed"`
	// ConfigBackup is where the config was kept.
	ConfigBackup string    `json:"configBackup"`
	Stopped      []Process `json:"stopped"`
}
