package wins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
	"sigs.k8s.io/swdt/pkg/winos"
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

// Program is the simulated rancher/wins: any existing file run with one
// of wins' subcommands (cli or srv) is wins.exe.
type Program struct{}

// Claims reports whether a run of exe with args is wins'.
func (Program) Claims(_ string, args []string) bool {
	return len(args) > 0 && (strings.EqualFold(args[0], "cli") || strings.EqualFold(args[0], "srv"))
}

// Run plays a wins binary: what wins prints on failure goes to stderr
// (wins logs through logrus to stderr) with exit code 1.
func (Program) Run(ctx context.Context, m *machine.Node, exe string, args []string, _ []byte) (winos.Result, error) {
	out, err := node{m}.runWins(ctx, exe, args)
	if ctx.Err() != nil {
		return winos.Result{}, ctx.Err()
	}
	if err != nil {
		return winos.Result{ExitCode: 1, Stderr: []byte(err.Error() + "\r\n")}, nil
	}
	return winos.Result{Stdout: []byte(out)}, nil
}

// Script returns nil: wins has no fixed script.
func (Program) Script(string) func(ctx context.Context, n *machine.Node, input []byte) (winos.Result, error) {
	return nil
}

// node is the machine as wins sees it.
type node struct{ *machine.Node }

// runWins plays wins.exe run with args; an error is what wins prints
// before exiting 1.
func (n node) runWins(ctx context.Context, binary string, args []string) (string, error) {
	if hangs, _ := n.Contains(binary, machine.MarkerWinsHang); hangs {
		<-ctx.Done()
		return "", ctx.Err()
	}
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
// with the remaining flags, starting automatically, and left Stopped,
// with wins' failure actions: restart after 5, 10 and 15 s, then nothing,
// the count reset after 5 minutes.
func (n node) winsRegister(ctx context.Context, binary, configPath string) error {
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
	err := n.CreateService(machine.ServiceConfig{Name: ops.WinsService, DisplayName: "Rancher Wins", BinaryPath: binary,
		Args: args, StartType: machine.StartAutomatic})
	if err != nil {
		return fmt.Errorf("failed to register service: could not create: %w", err)
	}
	return n.SetServiceRecovery(ops.WinsService, &machine.Recovery{ResetPeriod: 5 * time.Minute, Actions: []machine.RecoveryAction{
		{Type: "restart", Delay: 5 * time.Second}, {Type: "restart", Delay: 10 * time.Second},
		{Type: "restart", Delay: 15 * time.Second}, {Type: "none"}}})
}

// winsUnregister is `wins.exe srv app run --unregister`: the service is
// deleted (it goes away once it stops, as with sc.exe delete).
func (n node) winsUnregister() error {
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
func (n node) stopAndWait(ctx context.Context, svc machine.Service) error {
	if svc.Status == machine.StatusStopped {
		return nil
	}
	if svc.Status == machine.StatusStartPending {
		if _, err := n.WaitService(ctx, svc.Name, machine.StatusRunning, winsStopTimeout); err != nil {
			return err
		}
	}
	if err := n.StopService(svc.Name); err != nil {
		return err
	}
	if _, err := n.WaitService(ctx, svc.Name, machine.StatusStopped, winsStopTimeout); err == nil {
		return nil
	}
	if cur, err := n.Service(svc.Name); err == nil && cur.PID != 0 {
		if err := n.KillProcess(cur.PID); err != nil {
			return err
		}
	}
	_, err := n.WaitService(ctx, svc.Name, machine.StatusStopped, winsStopTimeout)
	return err
}

// winsDial is a wins client connecting to \\.\pipe\rancher_wins: it works
// only while the service runs and owns the pipe.
func (n node) winsDial() error {
	svc, err := n.Service(ops.WinsService)
	if err != nil || svc.Status != machine.StatusRunning || !n.PipeExists(ops.WinsPipe) {
		return fmt.Errorf(`rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing open \\.\pipe\%s: The system cannot find the file specified."`, ops.WinsPipe)
	}
	return nil
}

// winsGetVersion answers `cli hst get-version` from the host registry.
func (n node) winsGetVersion() (string, error) {
	raw, err := json.Marshal(n.winsRegistryVersion())
	if err != nil {
		return "", err
	}
	return string(raw), nil
}

// winsRegistryVersion reads ops.WinsVersionKeys from the simulated
// registry: numbers for DWORDs, strings otherwise, nil when absent.
func (n node) winsRegistryVersion() map[string]any {
	out := make(map[string]any, len(ops.WinsVersionKeys))
	for _, k := range ops.WinsVersionKeys {
		v, ok := n.RegistryValue(machine.KeyCurrentVersion, k)
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
func (n node) winsRunProcess(p string) (string, error) {
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
	base, err := ntfs.PathBase(p)
	if err != nil {
		return "", err
	}
	if !n.Exists(p) {
		return "", fmt.Errorf("rpc error: code = NotFound desc = could not found binary: %s does not exist", p)
	}
	renamed, err := ntfs.SiblingPath(p, ops.WinsProcessPrefix+base)
	if err != nil {
		return "", err
	}
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
func (n node) winsWhitelisted(p string) (bool, error) {
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
	if err != nil && !errors.Is(err, machine.ErrNotExist) {
		return false, fmt.Errorf("rpc error: code = Internal desc = could not load config from %s: %w", path, err)
	}
	if ntfs.CheckPath(p) != nil {
		return false, nil
	}
	for _, allowed := range cfg.WhiteList.ProcessPaths {
		if ntfs.SamePath(allowed, p) {
			return true, nil
		}
	}
	return false, nil
}
