package winos

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf16"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// service is an open service handle and the service control manager
// handle it was opened through.
type service struct {
	scm windows.Handle
	*mgr.Service
}

// openService opens name with only the access rights the caller needs
// (mgr.Mgr.OpenService asks for SERVICE_ALL_ACCESS).
func openService(name string, access uint32) (*service, error) {
	scm, err := windows.OpenSCManager(nil, nil, windows.SC_MANAGER_CONNECT)
	if err != nil {
		return nil, err
	}
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		windows.CloseServiceHandle(scm)
		return nil, err
	}
	h, err := windows.OpenService(scm, p, access)
	if err != nil {
		windows.CloseServiceHandle(scm)
		return nil, err
	}
	return &service{scm: scm, Service: &mgr.Service{Name: name, Handle: h}}, nil
}

func (s *service) close() {
	s.Service.Close()
	windows.CloseServiceHandle(s.scm)
}

// serviceStatus names a SERVICE_STATUS CurrentState as Get-Service does.
func serviceStatus(state svc.State) ServiceStatus {
	switch state {
	case svc.Stopped:
		return StatusStopped
	case svc.StartPending:
		return StatusStartPending
	case svc.StopPending:
		return StatusStopPending
	case svc.Running:
		return StatusRunning
	case svc.ContinuePending:
		return StatusContinuePending
	case svc.PausePending:
		return StatusPausePending
	case svc.Paused:
		return StatusPaused
	}
	return ServiceStatus(strconv.FormatUint(uint64(state), 10))
}

// startType names a service start type as Get-Service does (a delayed
// automatic start is Automatic there too).
func startType(t uint32) string {
	switch t {
	case windows.SERVICE_BOOT_START:
		return "Boot"
	case windows.SERVICE_SYSTEM_START:
		return "System"
	case windows.SERVICE_AUTO_START:
		return "Automatic"
	case windows.SERVICE_DEMAND_START:
		return "Manual"
	case windows.SERVICE_DISABLED:
		return "Disabled"
	}
	return strconv.FormatUint(uint64(t), 10)
}

// Service is QueryServiceStatusEx and QueryServiceConfig.
func (windowsOS) Service(name string) (Service, error) {
	s, err := openService(name, windows.SERVICE_QUERY_STATUS|windows.SERVICE_QUERY_CONFIG)
	if err != nil {
		return Service{}, winErr("open service", name, err)
	}
	defer s.close()
	st, err := s.Query()
	if err != nil {
		return Service{}, winErr("query service status", name, err)
	}
	buf := new(configBuffer)
	cfg := (*windows.QUERY_SERVICE_CONFIG)(unsafe.Pointer(buf))
	var n uint32
	if err := windows.QueryServiceConfig(s.Handle, cfg, uint32(unsafe.Sizeof(*buf)), &n); err != nil {
		return Service{}, winErr("query service config", name, err)
	}
	out := Service{
		Name:            name,
		DisplayName:     windows.UTF16PtrToString(cfg.DisplayName),
		Status:          serviceStatus(st.State),
		StartType:       startType(cfg.StartType),
		PID:             int(st.ProcessId),
		CommandLine:     windows.UTF16PtrToString(cfg.BinaryPathName),
		Dependencies:    multiString(cfg.Dependencies),
		ExitCode:        int(st.Win32ExitCode),
		ServiceExitCode: int(st.ServiceSpecificExitCode),
		Shared:          cfg.ServiceType&windows.SERVICE_WIN32_SHARE_PROCESS != 0,
	}
	if len(out.Dependencies) == 0 {
		// Wine's QueryServiceConfig returns no dependencies.
		out.Dependencies = registeredDependencies(name)
	}
	if st.State != svc.Stopped && st.ProcessId != 0 {
		out.ProcessExitCode, out.ProcessExited = processExit(st.ProcessId)
	}
	return out, nil
}

// processExit is OpenProcess and GetExitCodeProcess: whether the process
// pid has exited, and its exit code. A PID that names no process any more
// (ERROR_INVALID_PARAMETER) has exited with an unknown code (-1); one
// that cannot be opened for another reason is taken as alive.
func processExit(pid uint32) (int, bool) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
	if errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		return -1, true
	}
	if err != nil {
		return 0, false
	}
	defer windows.CloseHandle(h)
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil || code == stillActive {
		return 0, false
	}
	return int(code), true
}

// stillActive is STILL_ACTIVE, GetExitCodeProcess's code for a process
// that runs.
const stillActive = 259

// configBuffer receives QueryServiceConfig's and QueryServiceConfig2's
// results: both document 8 KiB as the most they return, so one call
// always suffices. It is made of uint64s so the structures at its start
// are aligned.
type configBuffer [8 << 10 / 8]uint64

// multiString splits a list of NUL-terminated strings ended by an empty
// one, as QueryServiceConfig returns dependencies.
func multiString(p *uint16) []string {
	var out []string
	for p != nil && *p != 0 {
		n := 0
		for *(*uint16)(unsafe.Add(unsafe.Pointer(p), 2*n)) != 0 {
			n++
		}
		out = append(out, windows.UTF16ToString(unsafe.Slice(p, n)))
		p = (*uint16)(unsafe.Add(unsafe.Pointer(p), 2*(n+1)))
	}
	return out
}

// Dependents is EnumDependentServices over services in any state, in the
// order it returns them (the reverse of their start order).
func (windowsOS) Dependents(name string) ([]string, error) {
	s, err := openService(name, windows.SERVICE_ENUMERATE_DEPENDENTS)
	if err != nil {
		return nil, winErr("open service", name, err)
	}
	defer s.close()
	deps, err := s.ListDependentServices(svc.AnyActivity)
	if err != nil {
		return nil, winErr("enumerate dependent services", name, err)
	}
	if len(deps) > 0 {
		return deps, nil
	}
	// A service control manager that keeps no dependencies (Wine's)
	// reports none: the services' registered dependencies say.
	return registeredDependents(name)
}

// servicesKey holds every service's registration below HKLM.
const servicesKey = `SYSTEM\CurrentControlSet\Services`

// registeredDependencies is the service's DependOnService registry value:
// the services it was registered to need.
func registeredDependencies(name string) []string {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, servicesKey+`\`+name, registry.QUERY_VALUE)
	if err != nil {
		return nil
	}
	defer k.Close()
	deps, _, err := k.GetStringsValue("DependOnService")
	if err != nil {
		return nil
	}
	return deps
}

// registeredDependents is Dependents from every service's DependOnService
// registry value, in the order EnumDependentServices uses: a service's
// own dependents before it.
func registeredDependents(name string) ([]string, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, servicesKey, registry.ENUMERATE_SUB_KEYS)
	if err != nil {
		return nil, winErr("open registry key", `HKLM\`+servicesKey, err)
	}
	defer k.Close()
	names, err := k.ReadSubKeyNames(-1)
	if err != nil {
		return nil, winErr("list registry key", `HKLM\`+servicesKey, err)
	}
	slices.Sort(names)
	dependents := map[string][]string{}
	for _, n := range names {
		for _, d := range registeredDependencies(n) {
			dependents[strings.ToLower(d)] = append(dependents[strings.ToLower(d)], n)
		}
	}
	var out []string
	seen := map[string]bool{strings.ToLower(name): true}
	var visit func(string)
	visit = func(n string) {
		for _, d := range dependents[strings.ToLower(n)] {
			if !seen[strings.ToLower(d)] {
				seen[strings.ToLower(d)] = true
				visit(d)
				out = append(out, d)
			}
		}
	}
	visit(name)
	return out, nil
}

// CreateService is CreateService through mgr, which quotes the program
// and each argument (syscall.EscapeArg) into the command line.
func (windowsOS) CreateService(cfg ServiceConfig) error {
	m, err := mgr.Connect()
	if err != nil {
		return winErr("connect to the service control manager", cfg.Name, err)
	}
	defer m.Disconnect()
	start := uint32(windows.SERVICE_AUTO_START)
	if cfg.StartType == "Manual" {
		start = windows.SERVICE_DEMAND_START
	}
	s, err := m.CreateService(cfg.Name, cfg.Program, mgr.Config{
		DisplayName:  cfg.DisplayName,
		Description:  cfg.Description,
		StartType:    start,
		Dependencies: cfg.DependsOn,
	}, cfg.Args...)
	if err != nil {
		return winErr("create service", cfg.Name, err)
	}
	return winErr("create service", cfg.Name, s.Close())
}

// ConfigureService is ChangeServiceConfig, with the command line quoted
// as mgr.CreateService quotes it, and the dependencies always given: an
// empty list (two terminators) clears them, where NULL, which mgr sends
// for an empty list, leaves them as they are. The description is set
// with ChangeServiceConfig2 when given. (mgr's UpdateConfig would first
// read every optional setting, and Wine refuses some of those levels.)
func (windowsOS) ConfigureService(cfg ServiceConfig) error {
	s, err := openService(cfg.Name, windows.SERVICE_CHANGE_CONFIG)
	if err != nil {
		return winErr("open service", cfg.Name, err)
	}
	defer s.close()
	line := syscall.EscapeArg(cfg.Program)
	for _, a := range cfg.Args {
		line += " " + syscall.EscapeArg(a)
	}
	start := uint32(windows.SERVICE_AUTO_START)
	if cfg.StartType == "Manual" {
		start = windows.SERVICE_DEMAND_START
	}
	display := cfg.DisplayName
	if display == "" {
		display = cfg.Name
	}
	var deps []uint16
	for _, d := range cfg.DependsOn {
		deps = append(deps, utf16.Encode([]rune(d+"\x00"))...)
	}
	deps = append(deps, 0, 0)
	linePtr, err := windows.UTF16PtrFromString(line)
	if err != nil {
		return winErr("change service config", cfg.Name, err)
	}
	displayPtr, err := windows.UTF16PtrFromString(display)
	if err != nil {
		return winErr("change service config", cfg.Name, err)
	}
	const keep = windows.SERVICE_NO_CHANGE
	if err := windows.ChangeServiceConfig(s.Handle, keep, start, keep, linePtr, nil, nil, &deps[0], nil, nil, displayPtr); err != nil {
		return winErr("change service config", cfg.Name, err)
	}
	if cfg.Description == "" {
		return nil
	}
	desc, err := windows.UTF16PtrFromString(cfg.Description)
	if err != nil {
		return winErr("change service description", cfg.Name, err)
	}
	info := windows.SERVICE_DESCRIPTION{Description: desc}
	return winErr("change service description", cfg.Name,
		windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_DESCRIPTION, (*byte)(unsafe.Pointer(&info))))
}

func (windowsOS) StartService(name string) error {
	s, err := openService(name, windows.SERVICE_START)
	if err != nil {
		return winErr("open service", name, err)
	}
	defer s.close()
	return winErr("start service", name, s.Start())
}

func (windowsOS) StopService(name string) error {
	s, err := openService(name, windows.SERVICE_STOP)
	if err != nil {
		return winErr("open service", name, err)
	}
	defer s.close()
	_, err = s.Control(svc.Stop)
	return winErr("stop service", name, err)
}

// Recovery is QueryServiceConfig2(SERVICE_CONFIG_FAILURE_ACTIONS).
func (windowsOS) Recovery(name string) (Recovery, error) {
	s, err := openService(name, windows.SERVICE_QUERY_CONFIG)
	if err != nil {
		return Recovery{}, winErr("open service", name, err)
	}
	defer s.close()
	buf := new(configBuffer)
	var n uint32
	err = windows.QueryServiceConfig2(s.Handle, windows.SERVICE_CONFIG_FAILURE_ACTIONS,
		(*byte)(unsafe.Pointer(buf)), uint32(unsafe.Sizeof(*buf)), &n)
	if err != nil {
		return Recovery{}, winErr("query service failure actions", name, err)
	}
	fa := (*windows.SERVICE_FAILURE_ACTIONS)(unsafe.Pointer(buf))
	r := Recovery{ResetPeriod: time.Duration(fa.ResetPeriod) * time.Second}
	if fa.Actions != nil {
		for _, a := range unsafe.Slice(fa.Actions, fa.ActionsCount) {
			r.Actions = append(r.Actions, RecoveryAction{Type: int(a.Type), Delay: time.Duration(a.Delay) * time.Millisecond})
		}
	}
	return r, nil
}

// SetRecovery is ChangeServiceConfig2(SERVICE_CONFIG_FAILURE_ACTIONS).
// It is called here rather than through mgr's SetRecoveryActions, which
// cannot clear the actions: an empty list must still pass a non-NULL
// array, as a NULL one leaves the actions unchanged. The handle needs
// SERVICE_START as well, which a restart action requires.
func (windowsOS) SetRecovery(name string, r Recovery) error {
	s, err := openService(name, windows.SERVICE_CHANGE_CONFIG|windows.SERVICE_START)
	if err != nil {
		return winErr("open service", name, err)
	}
	defer s.close()
	actions := make([]windows.SC_ACTION, max(1, len(r.Actions)))
	for i, a := range r.Actions {
		actions[i] = windows.SC_ACTION{Type: uint32(a.Type), Delay: scMilliseconds(a.Delay)}
		if a.Type == RecoveryReboot {
			// ChangeServiceConfig2 requires it for a reboot action.
			if err := enablePrivilege(seShutdownName); err != nil {
				return err
			}
		}
	}
	fa := windows.SERVICE_FAILURE_ACTIONS{
		ResetPeriod:  scSeconds(r.ResetPeriod),
		ActionsCount: uint32(len(r.Actions)),
		Actions:      &actions[0],
	}
	err = windows.ChangeServiceConfig2(s.Handle, windows.SERVICE_CONFIG_FAILURE_ACTIONS, (*byte)(unsafe.Pointer(&fa)))
	return winErr("set service failure actions", name, err)
}

// ServiceEvents reads the service's display name (the Service Control
// Manager writes display names in its messages), then runs
// ScriptServiceEvents.
func (o windowsOS) ServiceEvents(ctx context.Context, name string, since time.Time, limit int) ([]string, error) {
	s, err := o.Service(name)
	if err != nil {
		return nil, err
	}
	res, err := o.RunScript(ctx, ScriptServiceEvents, eventsInput(name, s.DisplayName, since, limit))
	if err != nil {
		return nil, err
	}
	return serviceEvents(res)
}
