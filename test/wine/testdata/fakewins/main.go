//go:build windows

// Command fakewins plays rancher/wins for the Wine tests, with the
// commands swdt's agent runs and over real named pipes:
//
//	srv app run --register [--config F]  create the rancher-wins service
//	                                     (running "srv app run [--config F]")
//	srv app run --unregister             delete it
//	srv app run                          the service: serves
//	                                     \\.\pipe\rancher_wins and
//	                                     \\.\pipe\rancher_wins_proxy
//	cli hst get-version                  ask the service for the host's
//	                                     version (registry values, JSON)
//	cli prc run --path P                 ask the service to run P as
//	                                     rancher-wins-<name of P> beside it
//
// A client writes one request line to \\.\pipe\rancher_wins; the service
// answers with the output and a last line "exit N".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

const (
	serviceName = "rancher-wins"
	pipe        = `\\.\pipe\rancher_wins`
	proxyPipe   = `\\.\pipe\rancher_wins_proxy`
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cmd := strings.Join(args[:min(3, len(args))], " ")
	var err error
	switch {
	case cmd == "srv app run" && has(args, "--register"):
		err = register(args)
	case cmd == "srv app run" && has(args, "--unregister"):
		err = unregister()
	case cmd == "srv app run":
		err = svc.Run(serviceName, service{})
	case cmd == "cli hst get-version":
		return call("hst get-version")
	case cmd == "cli prc run":
		return call("prc run " + value(args, "--path"))
	default:
		err = fmt.Errorf("Incorrect Usage. No help topic for '%s'", strings.Join(args, " "))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func has(args []string, flag string) bool {
	for _, a := range args {
		if a == flag {
			return true
		}
	}
	return false
}

func value(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// register creates the service as wins does: the same flags minus
// --register, automatic start, restart 5, 10 and 15 s after a failure.
func register(args []string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	svcArgs := []string{"srv", "app", "run"}
	if c := value(args, "--config"); c != "" {
		svcArgs = append(svcArgs, "--config", c)
	}
	s, err := m.CreateService(serviceName, exe, mgr.Config{DisplayName: "Rancher Wins", StartType: mgr.StartAutomatic}, svcArgs...)
	if err != nil {
		return fmt.Errorf("failed to register service: %w", err)
	}
	defer s.Close()
	// Wine keeps no failure actions: an error here is not wins'.
	_ = s.SetRecoveryActions([]mgr.RecoveryAction{{Type: mgr.ServiceRestart, Delay: 5 * time.Second},
		{Type: mgr.ServiceRestart, Delay: 10 * time.Second}, {Type: mgr.ServiceRestart, Delay: 15 * time.Second}}, 300)
	return nil
}

func unregister() error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return fmt.Errorf("failed to unregister service: service hasn't been registered: %w", err)
	}
	defer s.Close()
	return s.Delete()
}

type service struct{}

func (service) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	go listen(pipe, answer)
	go listen(proxyPipe, func(io.ReadWriter) {})
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for c := range req {
		switch c.Cmd {
		case svc.Interrogate:
			status <- c.CurrentStatus
		case svc.Stop, svc.Shutdown:
			status <- svc.Status{State: svc.StopPending}
			return false, 0
		}
	}
	return false, 0
}

// listen serves the named pipe name, one goroutine per client.
func listen(name string, serve func(io.ReadWriter)) {
	p, err := windows.UTF16PtrFromString(name)
	if err != nil {
		return
	}
	for {
		h, err := windows.CreateNamedPipe(p, windows.PIPE_ACCESS_DUPLEX,
			windows.PIPE_TYPE_BYTE|windows.PIPE_READMODE_BYTE|windows.PIPE_WAIT, windows.PIPE_UNLIMITED_INSTANCES, 4096, 4096, 0, nil)
		if err != nil {
			return
		}
		if err := windows.ConnectNamedPipe(h, nil); err != nil && err != windows.ERROR_PIPE_CONNECTED {
			windows.CloseHandle(h)
			continue
		}
		go func() {
			f := os.NewFile(uintptr(h), name)
			serve(f)
			_ = windows.FlushFileBuffers(h)
			_ = windows.DisconnectNamedPipe(h)
			f.Close()
		}()
	}
}

// answer reads one request and writes its output and "exit N".
func answer(rw io.ReadWriter) {
	line, err := bufio.NewReader(rw).ReadString('\n')
	if err != nil {
		return
	}
	verb, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	verb2, arg, _ := strings.Cut(arg, " ")
	var out []byte
	code := 0
	switch verb + " " + verb2 {
	case "hst get-version":
		out, err = version()
	case "prc run":
		out, code, err = runProcess(arg)
	default:
		err = fmt.Errorf("unknown request %q", line)
	}
	if err != nil {
		out, code = []byte(err.Error()+"\n"), 1
	}
	fmt.Fprintf(rw, "%s\nexit %d\n", out, code)
}

// version reads the registry values wins' hst get-version prints.
func version() ([]byte, error) {
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `SOFTWARE\Microsoft\Windows NT\CurrentVersion`, registry.QUERY_VALUE)
	if err != nil {
		return nil, err
	}
	defer k.Close()
	out := map[string]any{}
	for _, name := range []string{"CurrentMajorVersionNumber", "CurrentMinorVersionNumber", "CurrentBuildNumber", "UBR", "ReleaseId", "BuildLabEx", "CurrentBuild"} {
		if s, _, err := k.GetStringValue(name); err == nil {
			out[name] = s
		} else if n, _, err := k.GetIntegerValue(name); err == nil {
			out[name] = n
		} else {
			out[name] = nil
		}
	}
	return json.Marshal(out)
}

// runProcess copies path to rancher-wins-<name> beside it and runs that.
func runProcess(path string) ([]byte, int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	renamed := filepath.Join(filepath.Dir(path), "rancher-wins-"+filepath.Base(path))
	if err := os.WriteFile(renamed, raw, 0o755); err != nil {
		return nil, 0, err
	}
	out, err := exec.Command(renamed).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return out, ee.ExitCode(), nil
	}
	return out, 0, err
}

// call sends one request to the service and relays its answer.
func call(request string) int {
	f, err := os.OpenFile(pipe, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rpc error: code = Unavailable desc = connection error: open %s: %v\n", pipe, err)
		return 1
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, request); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sc := bufio.NewScanner(f)
	var lines []string
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "exit "); ok {
			fmt.Print(strings.Join(lines, "\n"))
			code, _ := strconv.Atoi(n)
			return code
		}
		lines = append(lines, sc.Text())
	}
	fmt.Fprintln(os.Stderr, "the service closed the pipe without an answer")
	return 1
}
