package simnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"sigs.k8s.io/swdt/pkg/pwsh/ops"
)

// The simulated rancher/wins (DESIGN.md §5). wins.exe is never run: a
// command line given to a wins binary is interpreted here, against the
// machine's state, the way the real wins would answer it.

// winsDefaultConfig is where wins reads its config unless registered with
// --config.
const winsDefaultConfig = `C:\etc\rancher\wins\config`

// winsStopTimeout bounds how long the simulated wins waits for its service
// to stop (wins --register stops a running service before re-creating it).
const winsStopTimeout = 30 * time.Second

// winsConfig is the part of wins' config file the simulator honours.
type winsConfig struct {
	WhiteList struct {
		ProcessPaths []string `json:"processPaths"`
	} `json:"white_list"`
}

// WinsCommand interprets argv as a command line run on the node when
// argv[0] is an existing file invoked with one of wins' subcommands (cli
// or srv), and returns wins' exit code and output. handled is false for
// any other command, which the caller must simulate itself. It is the
// hook for `command` health checks such as [wins.exe, cli, hst,
// get-version], which pass only while the bridge works.
func (n *Node) WinsCommand(ctx context.Context, argv []string) (exitCode int, output string, handled bool) {
	if len(argv) < 2 || (!strings.EqualFold(argv[1], "cli") && !strings.EqualFold(argv[1], "srv")) {
		return 0, "", false
	}
	if fi, err := n.Stat(argv[0]); err != nil || fi.IsDir {
		return 0, "", false
	}
	out, err := n.runWins(ctx, argv[0], argv[1:])
	if err != nil {
		return 1, err.Error(), true
	}
	return 0, out, true
}

// runWins plays wins.exe run with args; an error is what wins prints
// before exiting 1.
func (n *Node) runWins(ctx context.Context, binary string, args []string) (string, error) {
	cmd := strings.ToLower(strings.Join(args[:min(3, len(args))], " "))
	switch {
	case cmd == "srv app run" && hasFlag(args, "--register"):
		return "", n.winsRegister(ctx, binary, flagValue(args, "--config"))
	case cmd == "srv app run" && hasFlag(args, "--unregister"):
		return "", n.winsUnregister()
	case cmd == "cli hst get-version":
		if err := n.winsDial(); err != nil {
			return "", err
		}
		return n.winsGetVersion()
	case cmd == "cli prc run":
		if err := n.winsDial(); err != nil {
			return "", err
		}
		return n.winsRunProcess(flagValue(args, "--path"))
	}
	return "", fmt.Errorf("Incorrect Usage. No help topic for '%s'", strings.Join(args, " "))
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if strings.EqualFold(a, flag) {
			return true
		}
	}
	return false
}

// flagValue returns the value of "--flag value" or "--flag=value".
func flagValue(args []string, flag string) string {
	for i, a := range args {
		if strings.EqualFold(a, flag) && i+1 < len(args) {
			return args[i+1]
		}
		if len(a) > len(flag) && strings.EqualFold(a[:len(flag)+1], flag+"=") {
			return a[len(flag)+1:]
		}
	}
	return ""
}

// winsRegister is `wins.exe srv app run --register`: a registered service
// is stopped and deleted first, then the service is created from binary
// with the remaining flags, starting automatically, and left Stopped.
func (n *Node) winsRegister(ctx context.Context, binary, configPath string) error {
	if svc, err := n.Service(ops.WinsService); err == nil {
		if err := n.stopAndWait(ctx, svc); err != nil {
			return fmt.Errorf("failed to register service: could not stop: %w", err)
		}
		if err := n.DeleteService(ops.WinsService); err != nil {
			return fmt.Errorf("failed to register service: could not delete: %w", err)
		}
	}
	args := []string{"srv", "app", "run"}
	if configPath != "" {
		args = append(args, "--config", configPath)
	}
	err := n.CreateService(ServiceConfig{Name: ops.WinsService, DisplayName: "Rancher Wins", BinaryPath: binary,
		Args: args, StartType: StartAutomatic})
	if err != nil {
		return fmt.Errorf("failed to register service: could not create: %w", err)
	}
	return nil
}

// winsUnregister is `wins.exe srv app run --unregister`: the service is
// deleted (it goes away once it stops, as with sc.exe delete).
func (n *Node) winsUnregister() error {
	if _, err := n.Service(ops.WinsService); err != nil {
		return fmt.Errorf("failed to unregister service: service hasn't been registered: %w", err)
	}
	if err := n.DeleteService(ops.WinsService); err != nil {
		return fmt.Errorf("failed to unregister service: could not delete: %w", err)
	}
	return nil
}

// stopAndWait stops a service and waits for it, killing its process past
// winsStopTimeout, as the wins ops do.
func (n *Node) stopAndWait(ctx context.Context, svc Service) error {
	if svc.Status == StatusStopped {
		return nil
	}
	if svc.Status == StatusStartPending {
		if _, err := n.WaitService(ctx, svc.Name, StatusRunning, winsStopTimeout); err != nil {
			return err
		}
	}
	if err := n.StopService(svc.Name); err != nil {
		return err
	}
	if _, err := n.WaitService(ctx, svc.Name, StatusStopped, winsStopTimeout); err == nil {
		return nil
	}
	if cur, err := n.Service(svc.Name); err == nil && cur.PID != 0 {
		if err := n.KillProcess(cur.PID); err != nil {
			return err
		}
	}
	_, err := n.WaitService(ctx, svc.Name, StatusStopped, winsStopTimeout)
	return err
}

// winsDial is a wins client connecting to \\.\pipe\rancher_wins: it works
// only while the service runs and owns the pipe.
func (n *Node) winsDial() error {
	svc, err := n.Service(ops.WinsService)
	if err != nil || svc.Status != StatusRunning || !n.PipeExists(ops.WinsPipe) {
		return fmt.Errorf(`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing open \\.\pipe\%s: The system cannot find the file specified."`, ops.WinsPipe)
	}
	return nil
}

// winsGetVersion answers `cli hst get-version` from the host registry.
func (n *Node) winsGetVersion() (string, error) {
	raw, err := json.Marshal(n.winsRegistryVersion())
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

// winsRegistryVersion reads ops.WinsVersionKeys from the simulated
// registry: numbers for DWORDs, strings otherwise, nil when absent.
func (n *Node) winsRegistryVersion() map[string]any {
	out := make(map[string]any, len(ops.WinsVersionKeys))
	for _, k := range ops.WinsVersionKeys {
		v, ok := n.RegistryValue(KeyCurrentVersion, k)
		switch {
		case !ok:
			out[k] = nil
		case v.Kind == "DWord" || v.Kind == "QWord":
			out[k] = v.Number
		default:
			out[k] = v.String
		}
	}
	return out
}

// winsRunProcess is `cli prc run --path p`: wins checks p against its
// whitelist, renames it to rancher-wins-<name> in the same directory and
// starts it. The simulated process prints the hostname and keeps running
// (holding its file locked) until it is killed, like an orphan.
func (n *Node) winsRunProcess(p string) (string, error) {
	if p == "" {
		return "", errors.New("--path is required")
	}
	allowed, err := n.winsWhitelisted(p)
	if err != nil {
		return "", err
	}
	if !allowed {
		return "", fmt.Errorf("rpc error: code = PermissionDenied desc = invalid path: %s is not in the white list", p)
	}
	w, err := parseWinPath(p)
	if err != nil {
		return "", err
	}
	if !n.Exists(p) {
		return "", fmt.Errorf("rpc error: code = NotFound desc = could not found binary: %s does not exist", p)
	}
	renamed := string(w.dir().join(ops.WinsProcessPrefix + w.base()))
	if err := n.Rename(p, renamed, true); err != nil {
		return "", fmt.Errorf("rpc error: code = Internal desc = could not rename binary: %w", err)
	}
	if _, err := n.StartProcess(renamed, `"`+renamed+`"`); err != nil {
		return "", fmt.Errorf("rpc error: code = Internal desc = could not create process: %w", err)
	}
	return n.Hostname(), nil
}

// winsWhitelisted reads the config file the service was registered with
// and reports whether p is one of its processPaths (case-insensitively, as
// Windows paths compare).
func (n *Node) winsWhitelisted(p string) (bool, error) {
	svc, err := n.Service(ops.WinsService)
	if err != nil {
		return false, err
	}
	path := flagValue(svc.Args, "--config")
	if path == "" {
		path = winsDefaultConfig
	}
	var cfg winsConfig
	raw, err := n.ReadFile(path)
	if err == nil {
		err = yaml.Unmarshal(raw, &cfg)
	}
	if err != nil && !errors.Is(err, ErrNotExist) {
		return false, fmt.Errorf("rpc error: code = Internal desc = could not load config from %s: %w", path, err)
	}
	want, err := parseWinPath(p)
	if err != nil {
		return false, nil
	}
	for _, allowed := range cfg.WhiteList.ProcessPaths {
		if w, err := parseWinPath(allowed); err == nil && w.key() == want.key() {
			return true, nil
		}
	}
	return false, nil
}

// winsServiceInfo describes the rancher-wins service as the wins ops'
// Win32_Service query does.
func (n *Node) winsServiceInfo() ops.ServiceInfo {
	info := ops.ServiceInfo{Name: ops.WinsService, DependsOn: []string{}, Dependents: []string{}}
	svc, err := n.Service(ops.WinsService)
	if err != nil {
		return info
	}
	info.Name, info.Exists = svc.Name, true
	info.Status, info.StartType, info.PID = string(svc.Status), string(svc.StartType), svc.PID
	info.BinaryPath = `"` + svc.BinaryPath + `"`
	if len(svc.Args) > 0 {
		info.BinaryPath += " " + strings.Join(svc.Args, " ")
	}
	info.DependsOn = append(info.DependsOn, svc.Dependencies...)
	info.Dependents = append(info.Dependents, n.Dependents(svc.Name)...)
	return info
}

// winsOrphans lists rancher-wins-* processes, as Win32_Process with
// Name LIKE 'rancher-wins-%' does.
func (n *Node) winsOrphans() []ops.Process {
	out := []ops.Process{}
	for _, p := range n.Processes() {
		name := p.Image
		if w, err := parseWinPath(p.Image); err == nil {
			name = w.base()
		}
		if strings.HasPrefix(strings.ToLower(name), ops.WinsProcessPrefix) {
			out = append(out, ops.Process{PID: p.PID, Name: name, Path: p.Image, CommandLine: p.CommandLine})
		}
	}
	return out
}

// stopWinsOrphans kills every rancher-wins-* process.
func (n *Node) stopWinsOrphans() ([]ops.Process, error) {
	orphans := n.winsOrphans()
	for _, p := range orphans {
		if err := n.KillProcess(p.PID); err != nil {
			var f *OpFailure
			if errors.As(err, &f) && f.Kind == "not-found" {
				continue // exited meanwhile
			}
			return orphans, err
		}
	}
	return orphans, nil
}

func opWinsInspect(_ context.Context, n *Node, req ops.WinsInspectRequest) (ops.WinsInspectResponse, error) {
	resp := ops.WinsInspectResponse{Service: n.winsServiceInfo(), Orphans: n.winsOrphans()}
	raw, err := n.ReadFile(req.ConfigPath)
	switch {
	case err == nil:
		resp.ConfigExists, resp.ConfigContent = true, string(raw)
	case !errors.Is(err, ErrNotExist):
		return resp, err
	}
	return resp, nil
}

func opWinsConfigWrite(_ context.Context, n *Node, req ops.WinsConfigWriteRequest) (ops.WinsConfigWriteResponse, error) {
	resp := ops.WinsConfigWriteResponse{}
	old, err := n.ReadFile(req.Path)
	switch {
	case err == nil && string(old) == req.Content:
		return resp, nil
	case err == nil:
		resp.Backup = req.Path + ".swdt-bak"
		if err := n.Copy(req.Path, resp.Backup, true); err != nil {
			return ops.WinsConfigWriteResponse{}, err
		}
	case !errors.Is(err, ErrNotExist):
		return resp, err
	}
	w, err := parseWinPath(req.Path)
	if err != nil {
		return ops.WinsConfigWriteResponse{}, Fail("exception", "invalid path %q: %v", req.Path, err)
	}
	if err := n.MkdirAll(string(w.dir())); err != nil {
		return ops.WinsConfigWriteResponse{}, err
	}
	staged := req.Path + ".swdt-new"
	if err := n.WriteFile(staged, []byte(req.Content)); err != nil {
		return ops.WinsConfigWriteResponse{}, err
	}
	if err := n.Rename(staged, req.Path, true); err != nil {
		return ops.WinsConfigWriteResponse{}, err
	}
	resp.Changed = true
	return resp, nil
}

func opWinsRegister(ctx context.Context, n *Node, req ops.WinsRegisterRequest) (ops.WinsRegisterResponse, error) {
	if !n.Exists(req.Binary) {
		return ops.WinsRegisterResponse{}, Fail("not-found", "%s does not exist", req.Binary)
	}
	args := []string{"srv", "app", "run", "--register"}
	if req.Unregister {
		args = []string{"srv", "app", "run", "--unregister"}
	} else if req.ConfigPath != "" {
		args = append(args, "--config", req.ConfigPath)
	}
	out, err := n.runWins(ctx, req.Binary, args)
	if err != nil {
		return ops.WinsRegisterResponse{}, Fail("register-failed", "wins.exe %s exited 1: %v", strings.Join(args, " "), err)
	}
	svc, err := n.Service(ops.WinsService)
	return ops.WinsRegisterResponse{Registered: err == nil && !svc.DeletePending, Output: out}, nil
}

func opWinsOrphansStop(_ context.Context, n *Node, _ ops.WinsOrphansStopRequest) (ops.WinsOrphansStopResponse, error) {
	stopped, err := n.stopWinsOrphans()
	if err != nil {
		return ops.WinsOrphansStopResponse{}, err
	}
	return ops.WinsOrphansStopResponse{Stopped: stopped}, nil
}

func opWinsVerify(ctx context.Context, n *Node, req ops.WinsVerifyRequest) (ops.WinsVerifyResponse, error) {
	resp := ops.WinsVerifyResponse{
		Service:    n.winsServiceInfo(),
		Pipes:      map[string]bool{ops.WinsPipe: n.PipeExists(ops.WinsPipe), ops.WinsProxyPipe: n.PipeExists(ops.WinsProxyPipe)},
		GetVersion: map[string]any{},
		Registry:   n.winsRegistryVersion(),
	}
	if !n.Exists(req.Binary) {
		resp.GetVersionError = req.Binary + " does not exist"
	} else if out, err := n.runWins(ctx, req.Binary, []string{"cli", "hst", "get-version"}); err != nil {
		resp.GetVersionError = "wins.exe cli hst get-version exited 1: " + err.Error()
	} else if err := json.Unmarshal([]byte(out), &resp.GetVersion); err != nil {
		resp.GetVersionError = "wins.exe cli hst get-version printed no JSON: " + out
	}
	if req.Deep {
		resp.Deep = n.winsDeep(ctx, req)
	}
	return resp, nil
}

// winsDeep runs a copy of hostname.exe through the bridge and cleans up
// after it, as wins-verify.ps1 does.
func (n *Node) winsDeep(ctx context.Context, req ops.WinsVerifyRequest) *ops.WinsDeepResult {
	deep := &ops.WinsDeepResult{Expected: n.Hostname(), Leftovers: []string{}}
	if err := n.Copy(`C:\Windows\System32\HOSTNAME.EXE`, req.SmokePath, true); err != nil {
		deep.Error = err.Error()
	} else if out, err := n.runWins(ctx, req.Binary, []string{"cli", "prc", "run", "--path", req.SmokePath}); err != nil {
		deep.Output = err.Error()
		deep.Error = "wins.exe cli prc run exited 1"
	} else if deep.Output = strings.TrimSpace(out); !strings.Contains(deep.Output, deep.Expected) {
		deep.Error = "the process ran but did not print the hostname"
	} else {
		deep.OK = true
	}
	// Only the smoke's own process is stopped: other rancher-wins-*
	// processes are workloads wins runs for containers.
	var renamed string
	if w, err := parseWinPath(req.SmokePath); err == nil {
		renamed = string(w.dir().join(ops.WinsProcessPrefix + w.base()))
	}
	mine := func() []ops.Process {
		var out []ops.Process
		for _, p := range n.winsOrphans() {
			if w, err := parseWinPath(renamed); err == nil && strings.EqualFold(p.Name, w.base()) {
				out = append(out, p)
			}
		}
		return out
	}
	for _, p := range mine() {
		_ = n.KillProcess(p.PID) // Stop-Process -ErrorAction SilentlyContinue
	}
	if renamed != "" {
		for _, f := range []string{renamed, req.SmokePath} {
			if n.Exists(f) {
				if err := n.Remove(f); err != nil {
					deep.Leftovers = append(deep.Leftovers, f)
				}
			}
		}
	}
	for _, p := range mine() {
		deep.Leftovers = append(deep.Leftovers, "process "+strconv.Itoa(p.PID)+" "+p.Name)
	}
	return deep
}

func opWinsUninstall(ctx context.Context, n *Node, req ops.WinsUninstallRequest) (ops.WinsUninstallResponse, error) {
	resp := ops.WinsUninstallResponse{Removed: []string{}, Stopped: []ops.Process{}}
	svc, err := n.Service(ops.WinsService)
	registered := err == nil
	if registered {
		if err := n.stopAndWait(ctx, svc); err != nil {
			return resp, err
		}
	}
	stopped, err := n.stopWinsOrphans()
	if err != nil {
		return resp, err
	}
	resp.Stopped = stopped
	if registered {
		if n.Exists(req.Binary) {
			_, _ = n.runWins(ctx, req.Binary, []string{"srv", "app", "run", "--unregister"})
		}
		if _, err := n.Service(ops.WinsService); err == nil {
			if err := n.DeleteService(ops.WinsService); err != nil {
				return resp, Fail("unregister-failed", "could not delete service %s: %v", ops.WinsService, err)
			}
		}
		resp.ServiceRemoved = true
	}
	if n.Exists(req.ConfigPath) {
		resp.ConfigBackup = req.ConfigPath + ".swdt-bak"
		if err := n.Copy(req.ConfigPath, resp.ConfigBackup, true); err != nil {
			return resp, err
		}
		if err := n.Remove(req.ConfigPath); err != nil {
			return resp, err
		}
		resp.Removed = append(resp.Removed, req.ConfigPath)
	}
	for _, f := range []string{req.Binary, req.Binary + ".swdt-bak", req.Binary + ".swdt-new", req.Binary + ".swdt-failed"} {
		if n.Exists(f) {
			if err := n.Remove(f); err != nil {
				return resp, err
			}
			resp.Removed = append(resp.Removed, f)
		}
	}
	return resp, nil
}
