package agent

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// serviceRegister creates a stopped service that runs a program already
// on the node: a provisioner's register step, after its binary was put in
// place. The service control manager builds the command line from the
// program and each argument; nothing goes through a shell. An existing
// service is refused rather than changed: it is swapped like any other.
func serviceRegister(_ context.Context, w winos.OS, req ops.ServiceRegisterRequest) (ops.ServiceRegisterResponse, error) {
	if req.Name == "" || req.Program == "" {
		return ops.ServiceRegisterResponse{}, Fail(ops.KindInvalid, "a service to register needs a name and a program")
	}
	switch req.StartType {
	case "", "Automatic", "Manual":
	default:
		return ops.ServiceRegisterResponse{}, Fail(ops.KindInvalid, "start type %q is not Automatic or Manual", req.StartType)
	}
	exists, err := winsFileExists(w, req.Program)
	if err != nil {
		return ops.ServiceRegisterResponse{}, fmt.Errorf("look for %s: %w", req.Program, err)
	}
	if !exists {
		return ops.ServiceRegisterResponse{}, Fail(ops.KindNotFound, "%s does not exist: the service %s would have nothing to run", req.Program, req.Name)
	}
	start := req.StartType
	if start == "" {
		start = "Automatic"
	}
	err = w.CreateService(winos.ServiceConfig{
		// The display name is given whatever the request says: an SCM
		// that keeps none for NULL (Wine's) would otherwise report ""
		// and every later run see a drift from the name.
		Name: req.Name, DisplayName: orDefault(req.DisplayName, req.Name), Description: req.Description,
		Program: req.Program, Args: req.Args, StartType: start, DependsOn: req.DependsOn,
		// As sc.exe create registers a service: a failed start at boot
		// is logged.
		ErrorControl: winos.ErrorControlNormal,
	})
	switch {
	case errors.Is(err, winos.ErrServiceExists):
		return ops.ServiceRegisterResponse{}, Fail(ops.KindExists, "service %s already exists", req.Name)
	case errors.Is(err, winos.ErrServiceMarkedForDelete):
		return ops.ServiceRegisterResponse{}, Fail(ops.KindMarkedForDeletion, "service %s is marked for deletion: close the Services console and other service tools, or reboot the node, then run swdt again", req.Name)
	case err != nil:
		return ops.ServiceRegisterResponse{}, fmt.Errorf("register service %s: %w", req.Name, err)
	}
	svc, err := w.Service(req.Name)
	if err != nil {
		return ops.ServiceRegisterResponse{}, fmt.Errorf("read service %s: %w", req.Name, err)
	}
	return ops.ServiceRegisterResponse{Service: ops.ServiceInfo{
		Name: svc.Name, Exists: true, Status: string(svc.Status), StartType: svc.StartType, PID: svc.PID,
		BinaryPath: svc.CommandLine, Executable: req.Program,
		DependsOn: provisionNonNil(svc.Dependencies), Dependents: []string{},
	}}, nil
}
