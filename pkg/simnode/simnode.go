package simnode

import (
	"context"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/front"
	"sigs.k8s.io/swdt/pkg/simnode/kubelet"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/simnode/simos"
	"sigs.k8s.io/swdt/pkg/simnode/wine"
)

// The simulated node's API lives in the packages below pkg/simnode; these
// names keep it reachable as simnode.X.

// Node is the machine as one account sees it, with its Windows layer (OS).
type Node = simos.Node

type (
	// ACE is machine.ACE.
	ACE = machine.ACE
	// ACL is machine.ACL.
	ACL = machine.ACL
	// Account is machine.Account.
	Account = machine.Account
	// AgentHold is machine.AgentHold.
	AgentHold = machine.AgentHold
	// ChocoInstallResult is machine.ChocoInstallResult.
	ChocoInstallResult = machine.ChocoInstallResult
	// ChocoPackage is machine.ChocoPackage.
	ChocoPackage = machine.ChocoPackage
	// Chocolatey is machine.Chocolatey.
	Chocolatey = machine.Chocolatey
	// Delays is machine.Delays.
	Delays = machine.Delays
	// Faults is machine.Faults.
	Faults = machine.Faults
	// FileError is machine.FileError.
	FileError = machine.FileError
	// FileInfo is machine.FileInfo.
	FileInfo = machine.FileInfo
	// FirewallRule is machine.FirewallRule.
	FirewallRule = machine.FirewallRule
	// HyperVAdapter is machine.HyperVAdapter.
	HyperVAdapter = machine.HyperVAdapter
	// HyperVCheckpoint is machine.HyperVCheckpoint.
	HyperVCheckpoint = machine.HyperVCheckpoint
	// HyperVHost is machine.HyperVHost.
	HyperVHost = machine.HyperVHost
	// HyperVVM is machine.HyperVVM.
	HyperVVM = machine.HyperVVM
	// KubeletSetup is machine.KubeletSetup.
	KubeletSetup = machine.KubeletSetup
	// OpFailure is machine.OpFailure.
	OpFailure = machine.OpFailure
	// Options is front.Options.
	Options = front.Options
	// Process is machine.Process.
	Process = machine.Process
	// Recovery is machine.Recovery.
	Recovery = machine.Recovery
	// RecoveryAction is machine.RecoveryAction.
	RecoveryAction = machine.RecoveryAction
	// RegistryKey is machine.RegistryKey.
	RegistryKey = machine.RegistryKey
	// RegistryValue is machine.RegistryValue.
	RegistryValue = machine.RegistryValue
	// Server is front.Server.
	Server = front.Server
	// Service is machine.Service.
	Service = machine.Service
	// ServiceConfig is machine.ServiceConfig.
	ServiceConfig = machine.ServiceConfig
	// ServiceError is machine.ServiceError.
	ServiceError = machine.ServiceError
	// ServiceStatus is machine.ServiceStatus.
	ServiceStatus = machine.ServiceStatus
	// StartType is machine.StartType.
	StartType = machine.StartType
	// State is machine.State.
	State = machine.State
	// Wine is wine.Wine.
	Wine = wine.Wine
)

const (
	// ErrorControlIgnore is machine.ErrorControlIgnore.
	ErrorControlIgnore = machine.ErrorControlIgnore
	// ErrorControlNormal is machine.ErrorControlNormal.
	ErrorControlNormal = machine.ErrorControlNormal
	// AccountAdministrators is machine.AccountAdministrators.
	AccountAdministrators = machine.AccountAdministrators
	// AccountAuthenticated is machine.AccountAuthenticated.
	AccountAuthenticated = machine.AccountAuthenticated
	// AccountCreatorOwner is machine.AccountCreatorOwner.
	AccountCreatorOwner = machine.AccountCreatorOwner
	// AccountEveryone is machine.AccountEveryone.
	AccountEveryone = machine.AccountEveryone
	// AccountSystem is machine.AccountSystem.
	AccountSystem = machine.AccountSystem
	// AccountTrustedInstaller is machine.AccountTrustedInstaller.
	AccountTrustedInstaller = machine.AccountTrustedInstaller
	// AccountUsers is machine.AccountUsers.
	AccountUsers = machine.AccountUsers
	// ChocoDownloadError is machine.ChocoDownloadError.
	ChocoDownloadError = machine.ChocoDownloadError
	// ChocoNotAdminError is machine.ChocoNotAdminError.
	ChocoNotAdminError = machine.ChocoNotAdminError
	// ChocoRebootError is machine.ChocoRebootError.
	ChocoRebootError = machine.ChocoRebootError
	// CodeAccessDenied is machine.CodeAccessDenied.
	CodeAccessDenied = machine.CodeAccessDenied
	// CodeAlreadyExists is machine.CodeAlreadyExists.
	CodeAlreadyExists = machine.CodeAlreadyExists
	// CodeDependentServicesRunning is machine.CodeDependentServicesRunning.
	CodeDependentServicesRunning = machine.CodeDependentServicesRunning
	// CodeDirNotEmpty is machine.CodeDirNotEmpty.
	CodeDirNotEmpty = machine.CodeDirNotEmpty
	// CodeFileExists is machine.CodeFileExists.
	CodeFileExists = machine.CodeFileExists
	// CodeFileNotFound is machine.CodeFileNotFound.
	CodeFileNotFound = machine.CodeFileNotFound
	// CodeInvalidParameter is machine.CodeInvalidParameter.
	CodeInvalidParameter = machine.CodeInvalidParameter
	// CodePathNotFound is machine.CodePathNotFound.
	CodePathNotFound = machine.CodePathNotFound
	// CodeServiceAlreadyRunning is machine.CodeServiceAlreadyRunning.
	CodeServiceAlreadyRunning = machine.CodeServiceAlreadyRunning
	// CodeServiceCannotAcceptCtrl is machine.CodeServiceCannotAcceptCtrl.
	CodeServiceCannotAcceptCtrl = machine.CodeServiceCannotAcceptCtrl
	// CodeServiceDependencyFail is machine.CodeServiceDependencyFail.
	CodeServiceDependencyFail = machine.CodeServiceDependencyFail
	// CodeServiceDisabled is machine.CodeServiceDisabled.
	CodeServiceDisabled = machine.CodeServiceDisabled
	// CodeServiceDoesNotExist is machine.CodeServiceDoesNotExist.
	CodeServiceDoesNotExist = machine.CodeServiceDoesNotExist
	// CodeServiceExists is machine.CodeServiceExists.
	CodeServiceExists = machine.CodeServiceExists
	// CodeServiceMarkedForDelete is machine.CodeServiceMarkedForDelete.
	CodeServiceMarkedForDelete = machine.CodeServiceMarkedForDelete
	// CodeServiceNotActive is machine.CodeServiceNotActive.
	CodeServiceNotActive = machine.CodeServiceNotActive
	// CodeSharingViolation is machine.CodeSharingViolation.
	CodeSharingViolation = machine.CodeSharingViolation
	// KeyCurrentVersion is machine.KeyCurrentVersion.
	KeyCurrentVersion = machine.KeyCurrentVersion
	// KeyNetFx4 is machine.KeyNetFx4.
	KeyNetFx4 = machine.KeyNetFx4
	// KeyPowerShellEngine is machine.KeyPowerShellEngine.
	KeyPowerShellEngine = machine.KeyPowerShellEngine
	// KeyRDPPolicy is machine.KeyRDPPolicy.
	KeyRDPPolicy = machine.KeyRDPPolicy
	// KeyRDPTcp is machine.KeyRDPTcp.
	KeyRDPTcp = machine.KeyRDPTcp
	// KeyTerminalServer is machine.KeyTerminalServer.
	KeyTerminalServer = machine.KeyTerminalServer
	// KubeletNSSM is machine.KubeletNSSM.
	KubeletNSSM = machine.KubeletNSSM
	// KubeletNSSMPowerShell is machine.KubeletNSSMPowerShell.
	KubeletNSSMPowerShell = machine.KubeletNSSMPowerShell
	// KubeletSC is machine.KubeletSC.
	KubeletSC = machine.KubeletSC
	// LanguageConstrained is simos.LanguageConstrained.
	LanguageConstrained = simos.LanguageConstrained
	// MarkerCrashOnStart is machine.MarkerCrashOnStart.
	MarkerCrashOnStart = machine.MarkerCrashOnStart
	// MarkerExitOnStop is machine.MarkerExitOnStop.
	MarkerExitOnStop = machine.MarkerExitOnStop
	// MarkerHangOnStop is machine.MarkerHangOnStop.
	MarkerHangOnStop = machine.MarkerHangOnStop
	// MarkerKubelet is machine.MarkerKubelet.
	MarkerKubelet = machine.MarkerKubelet
	// MarkerVersion is machine.MarkerVersion.
	MarkerVersion = machine.MarkerVersion
	// MarkerWinsHang is machine.MarkerWinsHang.
	MarkerWinsHang = machine.MarkerWinsHang
	// MarkerWinsNoPipe is machine.MarkerWinsNoPipe.
	MarkerWinsNoPipe = machine.MarkerWinsNoPipe
	// MissingAPIFailureActions is simos.MissingAPIFailureActions.
	MissingAPIFailureActions = simos.MissingAPIFailureActions
	// MissingAPIPipeListing is simos.MissingAPIPipeListing.
	MissingAPIPipeListing = simos.MissingAPIPipeListing
	// MissingAPIPowerShell is simos.MissingAPIPowerShell.
	MissingAPIPowerShell = simos.MissingAPIPowerShell
	// NetFx472Server2019 is machine.NetFx472Server2019.
	NetFx472Server2019 = machine.NetFx472Server2019
	// NetFx48 is machine.NetFx48.
	NetFx48 = machine.NetFx48
	// NetFx48Server2022 is machine.NetFx48Server2022.
	NetFx48Server2022 = machine.NetFx48Server2022
	// Server2019 is machine.Server2019.
	Server2019 = machine.Server2019
	// Server2022 is machine.Server2022.
	Server2022 = machine.Server2022
	// NTFS is machine.NTFS.
	NTFS = machine.NTFS
	// ReFS is machine.ReFS.
	ReFS = machine.ReFS
	// ReFSCluster is machine.ReFSCluster.
	ReFSCluster = machine.ReFSCluster
	// PathAdminAuthorizedKeys is machine.PathAdminAuthorizedKeys.
	PathAdminAuthorizedKeys = machine.PathAdminAuthorizedKeys
	// PathChoco is machine.PathChoco.
	PathChoco = machine.PathChoco
	// PathNSSM is machine.PathNSSM.
	PathNSSM = machine.PathNSSM
	// PathPowerShell is machine.PathPowerShell.
	PathPowerShell = machine.PathPowerShell
	// PathStartKubelet is machine.PathStartKubelet.
	PathStartKubelet = machine.PathStartKubelet
	// PathSvchost is machine.PathSvchost.
	PathSvchost = machine.PathSvchost
	// StartAutomatic is machine.StartAutomatic.
	StartAutomatic = machine.StartAutomatic
	// StartDisabled is machine.StartDisabled.
	StartDisabled = machine.StartDisabled
	// StartManual is machine.StartManual.
	StartManual = machine.StartManual
	// StatusRunning is machine.StatusRunning.
	StatusRunning = machine.StatusRunning
	// StatusStartPending is machine.StatusStartPending.
	StatusStartPending = machine.StatusStartPending
	// StatusStopPending is machine.StatusStopPending.
	StatusStopPending = machine.StatusStopPending
	// StatusStopped is machine.StatusStopped.
	StatusStopped = machine.StatusStopped
	// VersionScanLimit is machine.VersionScanLimit.
	VersionScanLimit = machine.VersionScanLimit
)

var (
	// ErrExist is machine.ErrExist.
	ErrExist = machine.ErrExist
	// ErrIsDir is machine.ErrIsDir.
	ErrIsDir = machine.ErrIsDir
	// ErrNotEmpty is machine.ErrNotEmpty.
	ErrNotEmpty = machine.ErrNotEmpty
	// ErrNotExist is machine.ErrNotExist.
	ErrNotExist = machine.ErrNotExist
	// ErrSharingViolation is machine.ErrSharingViolation.
	ErrSharingViolation = machine.ErrSharingViolation
)

// AdminOnlyACL is machine.AdminOnlyACL.
func AdminOnlyACL(acl *ACL) bool {
	return machine.AdminOnlyACL(acl)
}

// BootWinePrefix is wine.BootWinePrefix.
func BootWinePrefix(ctx context.Context, dir string) error {
	return wine.BootWinePrefix(ctx, dir)
}

// DiscardFolder is machine.DiscardFolder.
func DiscardFolder(stateDir string) string {
	return machine.DiscardFolder(stateDir)
}

// DefaultDelays is machine.DefaultDelays.
func DefaultDelays() Delays {
	return machine.DefaultDelays()
}

// Fail is machine.Fail.
func Fail(kind ops.Kind, format string, args ...any) error {
	return machine.Fail(kind, format, args...)
}

// KubeletBinary is kubelet.KubeletBinary.
func KubeletBinary(version string) []byte {
	return kubelet.KubeletBinary(version)
}

// New is front.New.
func New(opts Options) (*Server, error) {
	return front.New(opts)
}

// ParseKubeletSetup is machine.ParseKubeletSetup.
func ParseKubeletSetup(s string) (KubeletSetup, error) {
	return machine.ParseKubeletSetup(s)
}

// ARM32Folder is machine.ARM32Folder.
const ARM32Folder = machine.ARM32Folder

// ParseArch is machine.ParseArch.
func ParseArch(s string) (string, error) {
	return machine.ParseArch(s)
}

// ParseLanguageMode is simos.ParseLanguageMode.
func ParseLanguageMode(s string) (string, error) {
	return simos.ParseLanguageMode(s)
}

// ParseNonAdmin is front.ParseNonAdmin.
func ParseNonAdmin(v string) (Account, error) {
	return front.ParseNonAdmin(v)
}

// WineMissing is wine.WineMissing.
func WineMissing() []string {
	return wine.WineMissing()
}
