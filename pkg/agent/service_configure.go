package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// serviceDrift says how the existing service svc differs from what a
// provisioner's register wants: its arguments, start type, display name
// and dependencies, each as "what: now -> wanted". The program is the
// destination the swap puts in place, so it is not compared here (a
// service that runs another file is the plan's concern).
func serviceDrift(svc winos.Service, want ops.ServiceRegisterRequest) []string {
	var drift []string
	var args []string
	if argv := splitCommandLine(svc.CommandLine); len(argv) > 1 {
		args = argv[1:]
	}
	if !slices.Equal(args, want.Args) {
		drift = append(drift, fmt.Sprintf("args: %s -> %s", quoteArgs(args), quoteArgs(want.Args)))
	}
	if start := orDefault(want.StartType, "Automatic"); !strings.EqualFold(svc.StartType, start) {
		drift = append(drift, fmt.Sprintf("startType: %s -> %s", svc.StartType, start))
	}
	if name := orDefault(want.DisplayName, want.Name); svc.DisplayName != name {
		drift = append(drift, fmt.Sprintf("displayName: %q -> %q", svc.DisplayName, name))
	}
	if !sameNames(svc.Dependencies, want.DependsOn) {
		drift = append(drift, fmt.Sprintf("dependsOn: %s -> %s", quoteArgs(svc.Dependencies), quoteArgs(want.DependsOn)))
	}
	return drift
}

// currentConfig is a service's configuration as a register request, to
// put it back: its program and arguments, start type, display name and
// dependencies.
func currentConfig(svc winos.Service) ops.ServiceRegisterRequest {
	req := ops.ServiceRegisterRequest{Name: svc.Name, DisplayName: svc.DisplayName, StartType: svc.StartType, DependsOn: svc.Dependencies}
	if argv := splitCommandLine(svc.CommandLine); len(argv) > 0 {
		req.Program, req.Args = argv[0], argv[1:]
	}
	return req
}

// serviceConfigure brings an existing service's configuration in line
// with a provisioner's register (service-configure): the command line
// runs req.Program with req.Args, the start type, display name and
// dependencies are req's. It does not restart the service: the caller
// does, or the swap that follows. A service that already matches is left
// alone.
func serviceConfigure(_ context.Context, w winos.OS, req ops.ServiceRegisterRequest) (ops.ServiceConfigureResponse, error) {
	if req.Name == "" || req.Program == "" {
		return ops.ServiceConfigureResponse{}, Fail(ops.KindInvalid, "a service to configure needs a name and a program")
	}
	switch req.StartType {
	case "", "Automatic", "Manual":
	default:
		return ops.ServiceConfigureResponse{}, Fail(ops.KindInvalid, "start type %q is not Automatic or Manual", req.StartType)
	}
	svc, err := w.Service(req.Name)
	if errors.Is(err, winos.ErrServiceDoesNotExist) {
		return ops.ServiceConfigureResponse{}, Fail(ops.KindNotFound, "service %s does not exist: nothing to configure", req.Name)
	}
	if err != nil {
		return ops.ServiceConfigureResponse{}, fmt.Errorf("read service %s: %w", req.Name, err)
	}
	resp := ops.ServiceConfigureResponse{Changed: serviceDrift(svc, req)}
	if len(resp.Changed) > 0 {
		err := w.ConfigureService(winos.ServiceConfig{
			Name: svc.Name, DisplayName: orDefault(req.DisplayName, req.Name), Description: req.Description,
			Program: req.Program, Args: req.Args, StartType: orDefault(req.StartType, "Automatic"), DependsOn: req.DependsOn,
		})
		if err != nil {
			return ops.ServiceConfigureResponse{}, fmt.Errorf("configure service %s: %w", req.Name, err)
		}
		if svc, err = w.Service(req.Name); err != nil {
			return ops.ServiceConfigureResponse{}, fmt.Errorf("read service %s: %w", req.Name, err)
		}
	}
	resp.Changed = provisionNonNil(resp.Changed)
	resp.Service = ops.ServiceInfo{
		Name: svc.Name, Exists: true, Status: string(svc.Status), StartType: svc.StartType, PID: svc.PID,
		BinaryPath: svc.CommandLine, Executable: req.Program,
		DependsOn: provisionNonNil(svc.Dependencies), Dependents: []string{},
	}
	return resp, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sameNames compares two lists of service names as sets, ignoring case.
func sameNames(a, b []string) bool {
	norm := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = strings.ToLower(s)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	return slices.Equal(norm(a), norm(b))
}

// quoteArgs shows a list as [a "b c"]: an element that holds a space or
// is empty in quotes, backslashes as they are (Windows paths).
func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t") {
			out[i] = `"` + a + `"`
		}
	}
	return "[" + strings.Join(out, " ") + "]"
}
