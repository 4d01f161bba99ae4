package agent

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// winsRegister registers the rancher-wins service with wins.exe srv app
// run --register (wins registers the service with the flags it was given
// minus --register, so --config makes it read the config swdt wrote), or
// removes it with --unregister.
//
// A registered service is stopped first, by the handler: wins would stop
// it itself, but by polling its stop control without a limit, failing on
// a service that is starting, and it never kills one whose stop hangs. A
// service marked for deletion must be gone before wins can create the new
// one. When registration fails, the old service's failure actions and
// running state are put back.
func winsRegister(ctx context.Context, w winos.OS, req ops.WinsRegisterRequest) (ops.WinsRegisterResponse, error) {
	exists, err := winsFileExists(w, req.Binary)
	if err != nil {
		return ops.WinsRegisterResponse{}, fmt.Errorf("look for %s: %w", req.Binary, err)
	}
	if !exists {
		return ops.WinsRegisterResponse{}, Fail(ops.KindNotFound, "%s does not exist", req.Binary)
	}
	args := []string{"srv", "app", "run", "--register"}
	if req.Unregister {
		args = []string{"srv", "app", "run", "--unregister"}
	} else if req.ConfigPath != "" {
		args = append(args, "--config", req.ConfigPath)
	}
	halt, err := winsStopService(ctx, w)
	if err == nil {
		err = winsWaitDeleted(ctx, w)
	}
	var res winos.Result
	if err == nil {
		res, err = winsExec(ctx, w, winsLimits.register, req.Binary, args...)
	}
	if err == nil && res.ExitCode != 0 {
		err = Fail(ops.KindRegisterFailed, "%s exited %d: %s", winsCommandLine(req.Binary, args), res.ExitCode, winsOutput(res))
	}
	if err != nil {
		return ops.WinsRegisterResponse{}, winsAlso(err, halt.undo(w, true))
	}
	registered, err := winsRegistered(w)
	if err != nil {
		return ops.WinsRegisterResponse{}, err
	}
	return ops.WinsRegisterResponse{Registered: registered, Output: winsOutput(res)}, nil
}

// winsWaitDeleted waits, when the stopped rancher-wins service is marked
// for deletion, until the service control manager has deleted it.
func winsWaitDeleted(ctx context.Context, w winos.OS) error {
	marked, err := winsMarkedForDeletion(w)
	if err != nil || !marked {
		return err
	}
	ok, err := poll(ctx, winsLimits.stop, winsLimits.poll, func() (bool, error) {
		_, err := w.Service(ops.WinsService)
		if winsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		return err
	}
	if !ok {
		return Fail(ops.KindMarkedForDeletion, "service %s is marked for deletion and still exists %s after it stopped: a program holds it open (close the Services console, Event Viewer or other service tools) or reboot the node, then run swdt again", ops.WinsService, winsLimits.stop)
	}
	return nil
}

// winsAlso adds what went wrong while undoing to an op's error, keeping
// the error's kind.
func winsAlso(err, also error) error {
	if also == nil {
		return err
	}
	var f *Failure
	if errors.As(err, &f) {
		return &Failure{Kind: f.Kind, Message: f.Message + "; and then: " + also.Error()}
	}
	return fmt.Errorf("%w; and then: %v", err, also)
}
