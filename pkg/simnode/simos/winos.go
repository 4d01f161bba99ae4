package simos

import (
	"context"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
	"sigs.k8s.io/swdt/pkg/simnode/programs"
	"sigs.k8s.io/swdt/pkg/winos"
)

// OS returns the node as the agent's Windows layer: what pkg/agent's
// handlers run against inside simnode. It applies the Win32 API's rules
// where they differ from PowerShell's conveniences: starting a running
// service or stopping a stopped one is an error, a stop is refused while a
// dependent runs, a rename never replaces, a running executable cannot be
// deleted or written.
func (n *Node) OS() winos.OS { return simOS{n} }

type simOS struct{ n *Node }

var _ winos.OS = simOS{}

// winErr turns simnode's errors into the Win32 codes the real layer
// reports.
func winErr(op, target string, err error) error {
	if err == nil {
		return nil
	}
	var se *machine.ServiceError
	if errors.As(err, &se) {
		return &winos.Error{Op: op, Target: se.Service, Code: winos.Errno(se.Code), Message: se.Message}
	}
	var fe *machine.FileError
	if errors.As(err, &fe) {
		return &winos.Error{Op: op, Target: fe.Path, Code: winos.Errno(fe.Code), Message: fe.Error()}
	}
	var f *machine.OpFailure
	if errors.As(err, &f) && f.Kind == ops.KindNotFound {
		return &winos.Error{Op: op, Target: target, Code: winos.ErrFileNotFound, Message: f.Message}
	}
	if perr := ntfs.CheckPath(target); perr != nil && strings.ContainsAny(target, `\/`) {
		return &winos.Error{Op: op, Target: target, Code: winos.ErrInvalidParameter, Message: perr.Error()}
	}
	return &winos.Error{Op: op, Target: target, Code: winos.ErrInvalidParameter, Message: err.Error()}
}

func (o simOS) Hostname() (string, error) { return o.n.Hostname(), nil }

func (o simOS) Arch() (string, error) { return o.n.Arch(), nil }

func (o simOS) CurrentUser() (winos.User, error) {
	owner := o.n.Account().Name
	if o.n.IsAdmin() {
		owner = winos.SIDAdministrators
	}
	return winos.User{Name: o.n.Username(), Admin: o.n.IsAdmin(), Owner: owner}, nil
}

func (o simOS) Service(name string) (winos.Service, error) {
	svc, err := o.n.Service(name)
	if err != nil {
		return winos.Service{}, winErr("open service", name, err)
	}
	return winos.Service{
		Name:         svc.Name,
		DisplayName:  svc.DisplayName,
		Status:       winos.ServiceStatus(svc.Status),
		StartType:    string(svc.StartType),
		PID:          svc.PID,
		CommandLine:  servicePathName(svc),
		Dependencies: svc.Dependencies,
		ErrorControl: errorControl(svc.ErrorControl),
		ExitCode:     svc.LastExitCode,
		Shared:       svc.ShareGroup != "",
	}, nil
}

// Dependents returns every direct and indirect dependent, each one's own
// dependents before it, as EnumDependentServices orders them.
func (o simOS) Dependents(name string) ([]string, error) {
	if _, err := o.n.Service(name); err != nil {
		return nil, winErr("open service", name, err)
	}
	var out []string
	seen := map[string]bool{strings.ToLower(name): true}
	var visit func(string)
	visit = func(s string) {
		for _, d := range o.n.Dependents(s) {
			if seen[strings.ToLower(d)] {
				continue
			}
			seen[strings.ToLower(d)] = true
			visit(d)
			out = append(out, d)
		}
	}
	visit(name)
	return out, nil
}

func (o simOS) CreateService(cfg winos.ServiceConfig) error {
	start := machine.StartType(cfg.StartType)
	if start == "" {
		start = machine.StartAutomatic
	}
	return winErr("create service", cfg.Name, o.n.CreateService(machine.ServiceConfig{
		Name: cfg.Name, DisplayName: cfg.DisplayName, BinaryPath: cfg.Program, Args: cfg.Args,
		StartType: start, Dependencies: cfg.DependsOn, ErrorControl: cfg.ErrorControl,
	}))
}

// errorControl spells a service's error control as winos does: the
// model's "" is what CreateService's 0 means, Ignore.
func errorControl(ec string) string {
	if ec == "" {
		return winos.ErrorControlIgnore
	}
	return ec
}

func (o simOS) ConfigureService(cfg winos.ServiceConfig) error {
	start := machine.StartType(cfg.StartType)
	if start == "" {
		start = machine.StartAutomatic
	}
	return winErr("change service config", cfg.Name, o.n.ConfigureService(cfg.Name, func(c *machine.ServiceConfig) {
		c.BinaryPath, c.Args, c.StartType, c.Dependencies = cfg.Program, cfg.Args, start, cfg.DependsOn
		c.DisplayName = cfg.DisplayName
		if c.DisplayName == "" {
			c.DisplayName = cfg.Name
		}
		if cfg.ErrorControl != "" {
			c.ErrorControl = cfg.ErrorControl
		}
	}))
}

func (o simOS) StartService(name string) error {
	svc, err := o.n.Service(name)
	if err != nil {
		return winErr("start service", name, err)
	}
	if svc.Status == machine.StatusRunning || svc.Status == machine.StatusStartPending {
		return &winos.Error{Op: "start service", Target: svc.Name, Code: winos.ErrServiceAlreadyRunning,
			Message: "An instance of the service is already running."}
	}
	return winErr("start service", name, o.n.StartService(name))
}

func (o simOS) StopService(name string) error {
	svc, err := o.n.Service(name)
	if err != nil {
		return winErr("stop service", name, err)
	}
	switch svc.Status {
	case machine.StatusStopped:
		return &winos.Error{Op: "stop service", Target: svc.Name, Code: winos.ErrServiceNotActive,
			Message: "The service has not been started."}
	case machine.StatusStopPending:
		return &winos.Error{Op: "stop service", Target: svc.Name, Code: winos.ErrServiceCannotAcceptCtrl,
			Message: "The service cannot accept control messages at this time."}
	}
	return winErr("stop service", name, o.n.StopService(name))
}

func (o simOS) Recovery(name string) (winos.Recovery, error) {
	svc, err := o.n.Service(name)
	if err != nil {
		return winos.Recovery{}, winErr("query service failure actions", name, err)
	}
	if err := o.missing(MissingAPIFailureActions, "query service failure actions", name); err != nil {
		return winos.Recovery{}, err
	}
	var r winos.Recovery
	if svc.Recovery != nil {
		r.ResetPeriod = svc.Recovery.ResetPeriod
		for _, a := range svc.Recovery.Actions {
			t := winos.RecoveryNone
			if a.Type == "restart" {
				t = winos.RecoveryRestart
			}
			r.Actions = append(r.Actions, winos.RecoveryAction{Type: t, Delay: a.Delay})
		}
	}
	return r, nil
}

func (o simOS) SetRecovery(name string, r winos.Recovery) error {
	rec := &machine.Recovery{ResetPeriod: r.ResetPeriod}
	for _, a := range r.Actions {
		t := "none"
		switch a.Type {
		case winos.RecoveryNone:
		case winos.RecoveryRestart:
			t = "restart"
		default:
			return &winos.Error{Op: "set service failure actions", Target: name, Code: winos.ErrInvalidParameter,
				Message: "simnode models only restart and no-action failure actions"}
		}
		rec.Actions = append(rec.Actions, machine.RecoveryAction{Type: t, Delay: a.Delay})
	}
	if len(rec.Actions) == 0 {
		rec = nil
	}
	return winErr("set service failure actions", name, o.n.SetServiceRecovery(name, rec))
}

func (o simOS) ServiceEvents(_ context.Context, name string, since time.Time, max int) ([]string, error) {
	if err := o.n.constrainedErr(winos.ScriptServiceEvents); err != nil {
		return nil, err
	}
	svc, err := o.n.Service(name)
	if err != nil {
		return nil, winErr("read event log", name, err)
	}
	out := []string{}
	for i := len(svc.EventLog) - 1; i >= 0 && len(out) < max; i-- {
		if i < len(svc.EventTimes) && svc.EventTimes[i].Before(since) {
			break
		}
		// As ScriptServiceEvents does: its time (UTC, round-trip
		// format), a space, the message.
		line := svc.EventLog[i]
		if i < len(svc.EventTimes) {
			line = svc.EventTimes[i].UTC().Format(time.RFC3339Nano) + " " + line
		}
		out = append(out, line)
	}
	return out, nil
}

func (o simOS) Processes() ([]winos.Process, error) {
	var out []winos.Process
	for _, p := range o.n.Processes() {
		out = append(out, winos.Process{PID: p.PID, ParentPID: p.Parent, Started: p.Started, Name: path.Base(strings.ReplaceAll(p.Image, `\`, "/")), Path: p.Image, CommandLine: p.CommandLine})
	}
	return out, nil
}

// KillProcess kills pid when its creation time is started (zero: any):
// another process that got the PID since is left alone, as the real
// layer's handle check leaves it.
func (o simOS) KillProcess(pid int, started time.Time) error {
	gone := &winos.Error{Op: "terminate process", Target: strconv.Itoa(pid), Code: winos.ErrInvalidParameter, Message: "The parameter is incorrect."}
	if !started.IsZero() && !slices.ContainsFunc(o.n.Processes(), func(p machine.Process) bool { return p.PID == pid && p.Started.Equal(started) }) {
		return gone
	}
	if err := o.n.KillProcess(pid); err != nil {
		return gone
	}
	return nil
}

func (o simOS) Run(ctx context.Context, cmd winos.Command) (winos.Result, error) {
	return programs.Run(ctx, o.n.Node, cmd)
}

func (o simOS) RunScript(ctx context.Context, s winos.Script, input []byte) (winos.Result, error) {
	return o.n.runScript(ctx, s, input)
}

func (o simOS) Stat(p string) (winos.FileInfo, error) {
	fi, err := o.n.Stat(p)
	if err != nil {
		return winos.FileInfo{}, winErr("stat", p, err)
	}
	return winos.FileInfo{Size: fi.Size, ModTime: fi.ModTime, IsDir: fi.IsDir}, nil
}

func (o simOS) Open(p string) (winos.File, error) {
	f, err := o.n.OpenFile(p)
	if err != nil {
		return nil, winErr("open", p, err)
	}
	return o.n.damageEncoded(p, f), nil
}

// Create returns a winos.Cloner on a ReFS volume, as Windows' does.
func (o simOS) Create(p string) (io.WriteCloser, error) {
	f, err := o.n.CreateCloning(p)
	if err != nil {
		return nil, winErr("create", p, err)
	}
	if f.ClusterSize() == 0 {
		return f, nil
	}
	return cloneFile{f, p}, nil
}

// cloneFile is a file being written on a ReFS volume.
type cloneFile struct {
	machine.CloneFile
	path string
}

func (f cloneFile) CloneAppend(src winos.File, off, n int64) error {
	h, ok := src.(*os.File)
	if !ok {
		return winErr("clone into", f.path, errors.New("the source is not a file of this volume"))
	}
	return winErr("clone into", f.path, f.CloneFile.CloneAppend(h, off, n))
}

func (o simOS) WriteFile(p string, data []byte) error {
	return winErr("write", p, o.n.WriteFile(p, data))
}

func (o simOS) Rename(oldPath, newPath string) error {
	return winErr("rename", oldPath, o.n.Rename(oldPath, newPath, false))
}

func (o simOS) Remove(p string) error { return winErr("remove", p, o.n.Remove(p)) }

func (o simOS) ReadDir(p string) ([]string, error) {
	names, err := o.n.ReadDir(p)
	return names, winErr("list", p, err)
}

func (o simOS) MkdirAll(p string) error { return winErr("create directory", p, o.n.MkdirAll(p)) }

func (o simOS) FileVersion(p string) (string, error) {
	v, err := o.n.FileVersion(p)
	return v, winErr("read version", p, err)
}

// sids maps the account names simnode's ACL model records to SIDs; other
// accounts (simnode's own) are their names.
var sids = map[string]string{
	`builtin\administrators`:           winos.SIDAdministrators,
	`nt authority\system`:              winos.SIDSystem,
	`builtin\users`:                    winos.SIDUsers,
	`nt authority\authenticated users`: winos.SIDAuthenticated,
	`everyone`:                         winos.SIDEveryone,
	`creator owner`:                    winos.SIDCreatorOwner,
	`nt service\trustedinstaller`:      winos.SIDTrustedInstaller,
}

// sidOf is the SID of an account simnode's model names.
func sidOf(id string) string {
	if sid, ok := sids[strings.ToLower(id)]; ok {
		return sid
	}
	if strings.EqualFold(id, "administrators") {
		return winos.SIDAdministrators
	}
	if strings.EqualFold(id, "system") {
		return winos.SIDSystem
	}
	return id
}

// accountOf is the account name of a SID, as the model records it.
func accountOf(sid string) string {
	for name, s := range sids {
		if s == sid {
			return canonicalAccount(name)
		}
	}
	return sid
}

// masks maps icacls' rights letters to access masks.
var masks = map[string]uint32{"F": winos.FileAllAccess, "M": 0x1301BF, "RX": 0x1200A9, "R": 0x120089, "W": 0x100116, "AD": 0x4, "WD": 0x2}

// ACL reports the explicit entries (inherit-only ones included) and,
// unless inheritance is disabled, the inherited ones, as
// GetNamedSecurityInfo does.
func (o simOS) ACL(p string) (winos.ACL, error) {
	exp, eff, err := o.n.Security(p)
	if err != nil {
		return winos.ACL{}, winErr("read ACL", p, err)
	}
	var out winos.ACL
	if exp != nil {
		out.Protected = exp.InheritanceDisabled
		for _, e := range exp.Entries {
			out.Entries = append(out.Entries, winos.ACE{SID: sidOf(e.Identity), Mask: masks[strings.ToUpper(e.Rights)],
				Inherit: e.ObjectInherit || e.ContainerInherit || e.InheritOnly})
		}
	}
	for _, e := range eff {
		if e.Inherited {
			out.Entries = append(out.Entries, winos.ACE{SID: sidOf(e.Identity), Mask: masks[strings.ToUpper(e.Rights)],
				Inherit: e.ObjectInherit || e.ContainerInherit})
		}
	}
	return out, nil
}

func (o simOS) SetACL(p string, acl winos.ACL) error {
	if _, err := o.n.Stat(p); err != nil {
		return winErr("set ACL", p, err)
	}
	rec := &machine.ACL{InheritanceDisabled: acl.Protected}
	for _, e := range acl.Entries {
		if e.Deny {
			return &winos.Error{Op: "set ACL", Target: p, Code: winos.ErrInvalidParameter, Message: "simnode models allow entries only"}
		}
		rights := ""
		for letters, mask := range masks {
			if mask == e.Mask {
				rights = letters
			}
		}
		if rights == "" {
			return &winos.Error{Op: "set ACL", Target: p, Code: winos.ErrInvalidParameter, Message: "simnode models icacls' F, M, RX, R, W, AD and WD masks only"}
		}
		rec.Entries = append(rec.Entries, machine.ACE{Identity: accountOf(e.SID), Rights: rights, ObjectInherit: e.Inherit, ContainerInherit: e.Inherit})
	}
	if err := o.n.MayWriteSecurity(p); err != nil {
		return winErr("set ACL", p, err)
	}
	return winErr("set ACL", p, o.n.SetACL(p, rec))
}

func (o simOS) Owner(p string) (string, error) {
	owner, err := o.n.Owner(p)
	if err != nil {
		return "", winErr("read owner", p, err)
	}
	return sidOf(owner), nil
}

func (o simOS) SetOwner(p, sid string) error {
	if err := o.n.MayWriteSecurity(p); err != nil {
		return winErr("set owner", p, err)
	}
	return winErr("set owner", p, o.n.SetOwner(p, accountOf(sid)))
}

// canonicalAccount spells an account as Windows prints it.
func canonicalAccount(lower string) string {
	switch lower {
	case `builtin\administrators`:
		return `BUILTIN\Administrators`
	case `nt authority\system`:
		return `NT AUTHORITY\SYSTEM`
	case `builtin\users`:
		return `BUILTIN\Users`
	case `nt authority\authenticated users`:
		return `NT AUTHORITY\Authenticated Users`
	case `creator owner`:
		return machine.AccountCreatorOwner
	case `nt service\trustedinstaller`:
		return machine.AccountTrustedInstaller
	}
	return "Everyone"
}

// hklm spells a key below HKEY_LOCAL_MACHINE as simnode's model does.
func hklm(key string) string { return `HKLM:\` + strings.TrimPrefix(key, `\`) }

func (o simOS) RegistryValue(key, name string) (winos.RegistryValue, error) {
	if v, ok := o.serviceKeyValue(key, name); ok {
		return v, nil
	}
	v, ok := o.n.RegistryValue(hklm(key), name)
	if !ok {
		return winos.RegistryValue{}, &winos.Error{Op: "read registry value", Target: `HKLM\` + key + `\` + name, Code: winos.ErrFileNotFound,
			Message: "The system cannot find the file specified."}
	}
	return winos.RegistryValue{Name: v.Name, Kind: v.Kind, Number: uint64(v.Number), String: v.String, Strings: v.Strings}, nil
}

// serviceKeyValue reads the one value of a service's key the model keeps:
// DeleteFlag, which the service control manager sets to 1 in
// SYSTEM\CurrentControlSet\Services\<name> when it marks the service
// for deletion.
func (o simOS) serviceKeyValue(key, name string) (winos.RegistryValue, bool) {
	const services = `system\currentcontrolset\services\`
	k := strings.ToLower(strings.TrimPrefix(key, `\`))
	if !strings.HasPrefix(k, services) || !strings.EqualFold(name, "DeleteFlag") {
		return winos.RegistryValue{}, false
	}
	svc, err := o.n.Service(k[len(services):])
	if err != nil || !svc.DeletePending {
		return winos.RegistryValue{}, false
	}
	return winos.RegistryValue{Name: "DeleteFlag", Kind: winos.RegDWord, Number: 1}, true
}

func (o simOS) SetRegistryValue(key string, v winos.RegistryValue) error {
	return winErr("write registry value", key, o.n.SetRegistryValue(hklm(key),
		machine.RegistryValue{Name: v.Name, Kind: v.Kind, Number: int64(v.Number), String: v.String, Strings: v.Strings}))
}

func (o simOS) FirewallRules(_ context.Context, names []string) ([]winos.FirewallRule, error) {
	if err := o.stubScript(winos.ScriptFirewallRules); err != nil {
		return nil, err
	}
	if err := o.n.constrainedErr(winos.ScriptFirewallRules); err != nil {
		return nil, err
	}
	out := []winos.FirewallRule{}
	for _, name := range names {
		r, ok := o.n.FirewallRule(name)
		out = append(out, winos.FirewallRule{Name: name, Exists: ok, Enabled: ok && r.Enabled})
	}
	return out, nil
}

func (o simOS) SetFirewallRules(_ context.Context, names []string, enabled bool) error {
	if err := o.n.constrainedErr(winos.ScriptFirewallSet); err != nil {
		return err
	}
	for _, name := range names {
		if _, ok := o.n.FirewallRule(name); !ok {
			return &winos.Error{Op: "set firewall rule", Target: name, Code: winos.ErrNotFound,
				Message: "No MSFT_NetFirewallRule objects found with property 'Name' equal to '" + name + "'."}
		}
		if err := o.n.SetFirewallRuleEnabled(name, enabled); err != nil {
			return winErr("set firewall rule", name, err)
		}
	}
	return nil
}

func (o simOS) Pipes() ([]string, error) {
	if err := o.missing(MissingAPIPipeListing, "list named pipes", `\\.\pipe\`); err != nil {
		return nil, err
	}
	pipes := o.n.Pipes()
	sort.Strings(pipes)
	return pipes, nil
}

func (o simOS) PortListening(port int) (bool, error) { return o.n.PortListening(port), nil }

// servicePathName is the service's registered ImagePath
// (Win32_Service.PathName): the quoted executable and its arguments.
func servicePathName(svc machine.Service) string {
	s := `"` + svc.BinaryPath + `"`
	for _, a := range svc.Args {
		s += " " + escapeArg(a)
	}
	return s
}

// escapeArg quotes one argument as CreateService's caller does
// (syscall.EscapeArg, which is Windows-only): as it is unless it holds a
// space, tab, quote or backslash; backslashes double only before a quote
// or the closing quote.
func escapeArg(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, "\"\\ \t") {
		return s
	}
	space := strings.ContainsAny(s, " \t")
	if !strings.ContainsAny(s, "\"\\") {
		return `"` + s + `"`
	}
	var b strings.Builder
	if space {
		b.WriteByte('"')
	}
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	if space {
		b.WriteString(strings.Repeat(`\`, slashes))
		b.WriteByte('"')
	}
	return b.String()
}
