// Package winos is the Windows layer the agent's op handlers (pkg/agent)
// stand on: services, processes, files, registry, firewall rules, named
// pipes and TCP ports, behind one small interface.
//
// There are two implementations. The real one (winos_windows.go, build
// tag windows) is thin glue over golang.org/x/sys/windows and must hold
// no op logic: every decision (order, retries, timeouts, what counts as
// healthy) belongs to the handlers, where the tests can see it. The
// simulated one is pkg/simnode's model of a Windows node, so every test
// runs the real handlers over a simulated bottom layer.
//
// Errors carry Win32 error codes (Errno) so that handlers can tell a
// missing service from a refused stop the same way on both
// implementations.
package winos

import (
	"context"
	"io"
	"time"
)

// OS is one Windows machine as the agent sees it. Paths are absolute
// Windows paths (C:\k\kubelet.exe); registry keys are below
// HKEY_LOCAL_MACHINE, without a prefix (SOFTWARE\Microsoft\...).
// Every method is safe to call from one goroutine at a time.
type OS interface {
	// Hostname is the computer's DNS host name as configured (not the
	// upper-case NetBIOS name).
	Hostname() (string, error)
	// CurrentUser is the account the agent runs as.
	CurrentUser() (User, error)
	// Arch is the machine's own processor architecture as a GOARCH name
	// ("amd64", "arm64"), whatever the agent's: an amd64 agent that
	// Windows on ARM runs under emulation still reports arm64.
	Arch() (string, error)

	// Service reads one service; a missing service is
	// ErrServiceDoesNotExist.
	Service(name string) (Service, error)
	// Dependents lists the services that depend on name, directly or
	// through other services, in the order they must be stopped (what
	// EnumDependentServices returns).
	Dependents(name string) ([]string, error)
	// StartService asks the service control manager to start name and
	// returns without waiting (StartService).
	StartService(name string) error
	// StopService sends name a stop control and returns without waiting.
	// Like the Win32 API (and unlike .NET's ServiceController.Stop) it
	// refuses with ErrDependentServicesRunning while a dependent runs.
	StopService(name string) error
	// CreateService registers a new, stopped service that runs
	// cfg.Program with cfg.Args (CreateService; each argument is quoted
	// as one). An existing service is ErrServiceExists.
	CreateService(cfg ServiceConfig) error
	// ConfigureService replaces the command line (cfg.Program and
	// cfg.Args, quoted as CreateService does), start type, display name
	// and dependencies of an existing service, and its description when
	// cfg.Description is set (ChangeServiceConfig). A running service
	// keeps running; the change applies from its next start.
	ConfigureService(cfg ServiceConfig) error
	// Recovery reads what the service control manager does when the
	// service's process exits without a stop control.
	Recovery(name string) (Recovery, error)
	// SetRecovery replaces the service's failure actions.
	SetRecovery(name string, r Recovery) error
	// SetErrorControl changes only the service's error control (one of
	// the ErrorControl* constants; ChangeServiceConfig).
	SetErrorControl(name, errorControl string) error
	// ServiceEvents returns up to max System event log messages about
	// the service written at or after since, newest first, each as its
	// time (UTC, RFC 3339), a space and the message.
	ServiceEvents(ctx context.Context, name string, since time.Time, max int) ([]string, error)

	// Processes lists the running processes.
	Processes() ([]Process, error)
	// KillProcess terminates a process (TerminateProcess). started is
	// the creation time Processes reported for it (zero: any): a process
	// that no longer exists, or a later one that was given its PID, is
	// ErrInvalidParameter and is not touched; one that has already
	// exited is not an error.
	KillProcess(pid int, started time.Time) error
	// Run starts a program, waits for it and returns what it printed.
	// It is killed when ctx ends (and the error is ctx's). A program
	// that cannot be started is an error; a non-zero exit is not.
	Run(ctx context.Context, cmd Command) (Result, error)
	// RunScript runs one of the fixed PowerShell scripts of this package
	// with powershell.exe, input as JSON on its stdin.
	RunScript(ctx context.Context, s Script, input []byte) (Result, error)

	// Stat describes a file or directory; a missing one wraps
	// fs.ErrNotExist.
	Stat(path string) (FileInfo, error)
	// Open opens a file for reading, sequentially or at offsets.
	Open(path string) (File, error)
	// Create creates or truncates a file and opens it for writing.
	Create(path string) (io.WriteCloser, error)
	// WriteFile creates or truncates a file and writes data.
	WriteFile(path string, data []byte) error
	// Rename moves a file within its volume. It fails when newPath
	// exists. A running executable may be renamed.
	Rename(oldPath, newPath string) error
	// Remove deletes a file; a running executable cannot be deleted.
	Remove(path string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(path string) error
	// ReadDir lists the names of the entries of folder path.
	ReadDir(path string) ([]string, error)
	// FileVersion is an executable's file version ("" when it has none).
	FileVersion(path string) (string, error)
	// ACL reads a file's discretionary access list.
	ACL(path string) (ACL, error)
	// SetACL replaces a file's discretionary access list.
	SetACL(path string, acl ACL) error
	// Owner reads a file's or folder's owner, as a string SID.
	Owner(path string) (string, error)
	// SetOwner makes sid the owner of a file or folder (an administrator
	// may take ownership of anything).
	SetOwner(path, sid string) error

	// RegistryValue reads a value below HKEY_LOCAL_MACHINE; a missing key
	// or value wraps fs.ErrNotExist.
	RegistryValue(key, name string) (RegistryValue, error)
	// SetRegistryValue writes a value, creating the key when missing.
	SetRegistryValue(key string, v RegistryValue) error

	// FirewallRules reads rules by name (not by localized display name),
	// one result per name, in order.
	FirewallRules(ctx context.Context, names []string) ([]FirewallRule, error)
	// SetFirewallRules enables or disables rules by name.
	SetFirewallRules(ctx context.Context, names []string, enabled bool) error
	// CreateFirewallRule creates an enabled rule that allows one local
	// port (New-NetFirewallRule). A rule of that name must not exist.
	CreateFirewallRule(ctx context.Context, r FirewallRuleSpec) error
	// RemoveFirewallRules deletes rules by name and returns the names of
	// those that existed.
	RemoveFirewallRules(ctx context.Context, names []string) ([]string, error)

	// WindowsFeature reads a Windows feature's install state
	// (Get-WindowsFeature on Windows Server, Get-WindowsOptionalFeature
	// elsewhere).
	WindowsFeature(ctx context.Context, name string) (FeatureState, error)
	// InstallWindowsFeature installs a feature that is not installed and
	// returns its state afterwards: InstallPending until the reboot it
	// needs.
	InstallWindowsFeature(ctx context.Context, name string) (FeatureState, error)

	// LockMutex waits until this process owns the machine-wide named
	// mutex name (in the Global\ namespace), or ctx ends (ctx's error).
	// abandoned reports that its last owner ended without releasing it
	// (WAIT_ABANDONED): what it guarded may be half done. unlock
	// releases it; a process that ends releases what it owns (as
	// abandoned).
	LockMutex(ctx context.Context, name string) (unlock func(), abandoned bool, err error)

	// Pipes lists the named pipes below \\.\pipe\.
	Pipes() ([]string, error)
	// PipeExists reports whether \\.\pipe\name exists, without
	// connecting to it (WaitNamedPipe), for systems that cannot list
	// \\.\pipe\ (Wine).
	PipeExists(name string) (bool, error)
	// PortListening reports whether a TCP port is in the listening state.
	PortListening(port int) (bool, error)
}

// ServiceConfig is a service to create.
type ServiceConfig struct {
	Name        string
	DisplayName string
	Description string
	// Program is the executable; Args follow it on the command line.
	Program string
	Args    []string
	// StartType is Automatic or Manual.
	StartType string
	// DependsOn lists services that must run first.
	DependsOn []string
	// ErrorControl is what Windows does when the service fails to start
	// at boot (one of the ErrorControl* constants); "" is
	// ErrorControlIgnore on CreateService and the current one on
	// ConfigureService.
	ErrorControl string
}

// File is a file open for reading.
type File interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// Cloner is a file Create opened on a volume that can share clusters
// between files (block cloning: ReFS, and so Dev Drive; NTFS cannot):
// Create returns one there, and only there.
type Cloner interface {
	io.WriteCloser
	// ClusterSize is the volume's cluster size in bytes: CloneAppend's
	// offsets and lengths are multiples of it.
	ClusterSize() int64
	// CloneAppend extends the file by the n bytes of src at off, sharing
	// src's clusters rather than copying them
	// (FSCTL_DUPLICATE_EXTENTS_TO_FILE), and moves the file's offset
	// past them. The file's length, off and n must be multiples of
	// ClusterSize, and src a file Open opened on the same volume. A
	// refusal leaves the file as it was: the caller copies instead.
	CloneAppend(src File, off, n int64) error
}

// User is the account the agent runs as.
type User struct {
	// Name is DOMAIN\user.
	Name string
	// Admin is true when the process holds Administrators' rights
	// (an elevated token).
	Admin bool
	// Owner is the SID the files the process creates get as their owner
	// (the token's default owner: Administrators for an elevated
	// administrator under Windows Server's default policy, else the
	// account itself).
	Owner string
	// SID is the account's own SID: where a system records a file's
	// creator rather than the token's default owner (Wine does), the
	// files the process creates are owned by it.
	SID string
}

// ServiceStatus is a service's current state, named as Get-Service names
// it.
type ServiceStatus string

// The service states.
const (
	StatusStopped         ServiceStatus = "Stopped"
	StatusStartPending    ServiceStatus = "StartPending"
	StatusStopPending     ServiceStatus = "StopPending"
	StatusRunning         ServiceStatus = "Running"
	StatusContinuePending ServiceStatus = "ContinuePending"
	StatusPausePending    ServiceStatus = "PausePending"
	StatusPaused          ServiceStatus = "Paused"
)

// Service is one registered service.
type Service struct {
	Name        string
	DisplayName string
	Status      ServiceStatus
	// StartType is Automatic, Manual or Disabled (Boot and System for
	// drivers).
	StartType string
	// PID is the service's process while it is not Stopped, else 0.
	PID int
	// CommandLine is the registered ImagePath (Win32_Service.PathName):
	// the executable, quoted when it holds spaces, and its arguments.
	CommandLine string
	// Dependencies are the services this one needs.
	Dependencies []string
	// ExitCode is the Win32 exit code of the last stop (1066 means
	// ServiceExitCode holds the service's own code).
	ExitCode int
	// ServiceExitCode is the service-specific exit code.
	ServiceExitCode int
	// ProcessExited is true when Status says the service runs (or is
	// starting or stopping) but its process PID has exited: a service
	// control manager that did not notice (Wine's never does) reports a
	// dead service as Running, or a stopped one as StopPending for good.
	// ProcessExitCode is then the process's exit code.
	ProcessExited   bool
	ProcessExitCode int
	// ErrorControl is what Windows does when the service fails to start
	// at boot (one of the ErrorControl* constants).
	ErrorControl string
	// Shared is true for a service that shares its process with others
	// (SERVICE_WIN32_SHARE_PROCESS: an svchost.exe group): that process
	// outlives the service's stop, and killing it ends them all.
	Shared bool
}

// RecoveryAction is one failure action: what the service control manager
// does after the service's process exits unexpectedly.
type RecoveryAction struct {
	// Type is one of the Recovery* constants.
	Type int
	// Delay is how long the SCM waits before acting.
	Delay time.Duration
}

// Recovery action types (SC_ACTION_*).
const (
	RecoveryNone    = 0
	RecoveryRestart = 1
	RecoveryReboot  = 2
	RecoveryCommand = 3
)

// Recovery is a service's failure actions.
type Recovery struct {
	// Actions apply to the first, second, ... failure; the last repeats.
	Actions []RecoveryAction
	// ResetPeriod is how long without failures resets the count.
	ResetPeriod time.Duration
}

// Process is one running process.
type Process struct {
	PID int
	// ParentPID is the process that created this one. Windows keeps it
	// after that process ended, and may have given its PID to another
	// process since: a child started before the process now holding
	// ParentPID is not its child.
	ParentPID int
	// Started is when the process was created (zero when it cannot be
	// read).
	Started time.Time
	// Name is the image's file name (wins.exe).
	Name string
	// Path is the image's full path ("" when it cannot be read).
	Path string
	// CommandLine is the process's command line ("" when it cannot be
	// read).
	CommandLine string
}

// Command is a program to run.
type Command struct {
	// Path is the executable: an absolute path, or a bare name found in
	// C:\Windows\System32.
	Path string
	// Args are passed as separate arguments (escaped by the standard
	// rules of CommandLineToArgvW), never through a shell.
	Args []string
	// Stdin is written to the program's stdin, then closed.
	Stdin []byte
	// SearchPath looks a bare Path up in the agent's PATH (sshd's), as a
	// shell would, instead of only in C:\Windows\System32: for a command
	// the user typed (swdt exec), never for one swdt chose.
	SearchPath bool
	// Stdout and Stderr, when set, receive the program's output as it is
	// written, instead of Result keeping it.
	Stdout, Stderr io.Writer
}

// Result is what a finished program left.
type Result struct {
	ExitCode int
	Stdout   []byte
	Stderr   []byte
}

// FileInfo describes a file or directory.
type FileInfo struct {
	Size    int64
	ModTime time.Time
	IsDir   bool
}

// ACL is a file's discretionary access list, as far as swdt reads and
// writes one.
type ACL struct {
	// Protected is true when inheritance from the parent is disabled.
	Protected bool
	// Entries are the explicit entries, in order.
	Entries []ACE
}

// ACE is one access control entry.
type ACE struct {
	// SID is the trustee's string SID (S-1-5-32-544).
	SID string
	// Deny is true for an access-denied entry.
	Deny bool
	// Mask is the access mask (FileAllAccess for full control).
	Mask uint32
	// Inherit is true for an entry a folder passes on to the files and
	// folders below it ((OI)(CI), or inherit-only); on SetACL it makes
	// the entry apply to the folder and everything below it.
	Inherit bool
}

// Well-known SIDs and access masks.
const (
	SIDAdministrators = "S-1-5-32-544"
	SIDSystem         = "S-1-5-18"
	SIDUsers          = "S-1-5-32-545"
	SIDAuthenticated  = "S-1-5-11"
	SIDEveryone       = "S-1-1-0"
	SIDCreatorOwner   = "S-1-3-0"
	// SIDTrustedInstaller is NT SERVICE\TrustedInstaller (the Windows
	// Modules Installer), which owns C:\Windows and C:\Program Files on
	// every install.
	SIDTrustedInstaller = "S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464"
	FileAllAccess       = 0x1F01FF
	// FileReadExecute is read and execute: what an entry may grant
	// without letting its holder change anything.
	FileReadExecute = 0x1200A9
)

// Registry value kinds.
const (
	RegString       = "String"
	RegExpandString = "ExpandString"
	RegMultiString  = "MultiString"
	RegDWord        = "DWord"
	RegQWord        = "QWord"
	RegBinary       = "Binary"
)

// RegistryValue is one named registry value: numbers in Number, strings in
// String (Strings for MultiString).
type RegistryValue struct {
	Name    string
	Kind    string
	Number  uint64
	String  string
	Strings []string
}

// FirewallRule is one Windows Defender Firewall rule's state.
type FirewallRule struct {
	Name    string
	Exists  bool
	Enabled bool
}
