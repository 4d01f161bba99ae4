package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/pwsh"
	"sigs.k8s.io/swdt/pkg/remote"
	"sigs.k8s.io/swdt/pkg/vm/hvops"
)

// hypervOpTimeout bounds a Hyper-V op when the caller's context has no
// deadline; a stop gets its shutdown timeout on top.
const hypervOpTimeout = 2 * time.Minute

// hypervVM is one Hyper-V VM, driven through the ops of pkg/vm/hvops on
// the Hyper-V host.
type hypervVM struct {
	name    string
	where   string // the host as written, or "this machine"
	exec    pwsh.Execer
	closeFn func()
	log     *slog.Logger
}

// openHyperV reaches the Hyper-V host (over SSH, or this machine when
// spec.hyperv.host is empty and swdt runs on Windows) and checks that the
// VM exists.
func openHyperV(ctx context.Context, spec *v1alpha1.VMSpec, creds v1alpha1.CredentialsSpec, opts Options) (Provider, error) {
	host := ""
	if spec.HyperV != nil {
		host = spec.HyperV.Host
	}
	v := &hypervVM{name: spec.Name, where: host, log: opts.logger().With("vm", spec.Name)}
	if host == "" {
		v.where = "this machine"
		if runtime.GOOS != "windows" {
			return nil, usage(fmt.Errorf("%s: spec.vm.hyperv.host is empty, which means this machine, but swdt runs on %s: set it to the SSH address of the Hyper-V host", v.Describe(), runtime.GOOS))
		}
		v.exec = localPowerShell{}
	} else {
		dctx, cancel := context.WithTimeout(ctx, opts.dialTimeout())
		defer cancel()
		client, err := remote.Dial(dctx, sshHopConfig(host, creds, opts))
		if err != nil {
			return nil, fmt.Errorf("%s: %w: ssh to %s: %w", v.Describe(), ErrUnreachable, host, err)
		}
		v.exec, v.closeFn = client, func() { client.Close() }
	}
	if _, err := v.Status(ctx); err != nil {
		_ = v.Close()
		return nil, err
	}
	return v, nil
}

func (v *hypervVM) Describe() string {
	return fmt.Sprintf("VM %q (Hyper-V on %s)", v.name, v.where)
}

func (v *hypervVM) Close() error {
	if v.closeFn != nil {
		v.closeFn()
	}
	return nil
}

// hvCall runs one Hyper-V op, bounded by ctx's deadline or, without one,
// by bound, and turns the op's error kinds into this package's errors.
func hvCall[Req, Resp any](ctx context.Context, v *hypervVM, op hvops.Op[Req, Resp], req Req, bound time.Duration) (Resp, error) {
	var resp Resp
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	body, err := hvops.Script(op.Name)
	if err != nil {
		return resp, err
	}
	script, err := pwsh.BuildScript(op.Name, body, req)
	if err != nil {
		return resp, fmt.Errorf("%s: op %s: %w", v.Describe(), op.Name, err)
	}
	params, _ := json.Marshal(req)
	v.log.Debug("run hyper-v op", "op", op.Name, "params", string(params), "host", v.where)
	var stdout, stderr bytes.Buffer
	status, err := v.exec.Exec(ctx, pwsh.CommandLine(), bytes.NewReader(script), &stdout, &stderr)
	if err == nil {
		err = ctx.Err() // a cancelled session may still look like a clean exit
	}
	if err != nil {
		return resp, fmt.Errorf("%s: op %s: %w", v.Describe(), op.Name, err)
	}
	env, err := pwsh.ParseEnvelope(stdout.Bytes())
	if err != nil {
		detail := pwsh.DecodeCLIXML(stderr.String())
		if detail == "" {
			detail = strings.TrimSpace(stdout.String())
		}
		return resp, fmt.Errorf("%s: op %s: %w (exit status %d): %s", v.Describe(), op.Name, err, status, detail)
	}
	if !env.OK {
		return resp, v.opError(op.Name, env.Error)
	}
	if len(env.Data) > 0 && string(env.Data) != "null" {
		if err := json.Unmarshal(env.Data, &resp); err != nil {
			return resp, fmt.Errorf("%s: op %s: decode result: %w", v.Describe(), op.Name, err)
		}
	}
	return resp, nil
}

// opError maps an op's failure to this package's errors; the ones that
// mean a wrong name in the node file or on the command line are usage
// errors.
func (v *hypervVM) opError(op string, e *pwsh.EnvelopeError) error {
	var sentinel error
	switch e.Kind {
	case hvops.KindVMNotFound:
		sentinel = ErrVMNotFound
	case hvops.KindCheckpointNotFound:
		sentinel = ErrSnapshotNotFound
	case hvops.KindCheckpointExists:
		sentinel = ErrSnapshotExists
	case hvops.KindNoHyperV, hvops.KindAmbiguous:
		return usage(fmt.Errorf("%s: %s", v.Describe(), e.Message))
	default:
		return fmt.Errorf("%s: op %s failed (%s): %s", v.Describe(), op, e.Kind, e.Message)
	}
	return usage(fmt.Errorf("%s: %w: %s", v.Describe(), sentinel, e.Message))
}

// hypervState maps Hyper-V's VMState names to State.
func hypervState(s string) State {
	switch s {
	case "Running", "RunningCritical":
		return StateRunning
	case "Off", "OffCritical":
		return StateOff
	case "Saved", "SavedCritical", "FastSaved", "FastSavedCritical", "Saving", "FastSaving":
		return StateSaved
	case "Paused", "PausedCritical", "Pausing":
		return StatePaused
	case "Starting", "StartingCritical", "Resuming", "Reset":
		return StateStarting
	case "Stopping", "StoppingCritical", "ForceShutdown":
		return StateStopping
	}
	return StateOther
}

func (v *hypervVM) Status(ctx context.Context) (Status, error) {
	info, err := hvCall(ctx, v, hvops.VMStatus, hvops.VMRequest{Name: v.name}, hypervOpTimeout)
	if err != nil {
		return Status{}, err
	}
	return Status{Name: info.Name, Provider: v1alpha1.VMProviderHyperV, Hypervisor: v.where,
		State: hypervState(info.State), Snapshots: info.Checkpoints, CurrentSnapshot: info.CurrentCheckpoint}, nil
}

func (v *hypervVM) Start(ctx context.Context) (bool, error) {
	resp, err := hvCall(ctx, v, hvops.VMStart, hvops.VMRequest{Name: v.name}, hypervOpTimeout)
	return resp.AlreadyRunning, err
}

func (v *hypervVM) Stop(ctx context.Context, timeout time.Duration) (Stopped, error) {
	req := hvops.StopRequest{Name: v.name, TimeoutSeconds: max(1, int(timeout.Round(time.Second)/time.Second))}
	resp, err := hvCall(ctx, v, hvops.VMStop, req, timeout+hypervOpTimeout)
	return Stopped{Forced: resp.Forced, AlreadyOff: resp.AlreadyOff}, err
}

func (v *hypervVM) Snapshot(ctx context.Context, name string) error {
	if err := CheckSnapshotName(name); err != nil {
		return err
	}
	_, err := hvCall(ctx, v, hvops.CheckpointCreate, hvops.CheckpointRequest{Name: v.name, Checkpoint: name}, hypervOpTimeout)
	return err
}

func (v *hypervVM) Revert(ctx context.Context, name string) (State, error) {
	info, err := hvCall(ctx, v, hvops.CheckpointRestore, hvops.CheckpointRequest{Name: v.name, Checkpoint: name}, hypervOpTimeout)
	return hypervState(info.State), err
}

func (v *hypervVM) Snapshots(ctx context.Context) ([]Snapshot, error) {
	resp, err := hvCall(ctx, v, hvops.CheckpointList, hvops.VMRequest{Name: v.name}, hypervOpTimeout)
	if err != nil {
		return nil, err
	}
	out := make([]Snapshot, 0, len(resp.Checkpoints))
	for _, c := range resp.Checkpoints {
		created, err := time.Parse(time.RFC3339Nano, c.Created)
		if err != nil {
			return nil, fmt.Errorf("%s: checkpoint %s: creation time %q: %w", v.Describe(), c.Name, c.Created, err)
		}
		out = append(out, Snapshot{Name: c.Name, Created: created.UTC(), Parent: c.Parent, Current: c.Name == resp.Current})
	}
	return out, nil
}

func (v *hypervVM) Addresses(ctx context.Context) ([]Address, error) {
	resp, err := hvCall(ctx, v, hvops.VMAddresses, hvops.VMRequest{Name: v.name}, hypervOpTimeout)
	if err != nil {
		return nil, err
	}
	var out []Address
	for _, a := range resp.Adapters {
		for _, ip := range a.Addresses {
			out = append(out, Address{Interface: a.Name, MAC: a.MAC, IP: ip, Source: "adapter"})
		}
	}
	return sortAddresses(out), nil
}

// localPowerShell runs the op command line with this machine's
// powershell.exe, for a Hyper-V host that is the machine swdt runs on.
type localPowerShell struct{}

func (localPowerShell) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	// The command line is pwsh.CommandLine(): fixed words and base64,
	// no quoting to undo.
	args := strings.Fields(cmd)
	c := exec.CommandContext(ctx, args[0], args[1:]...)
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	err := c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	if err != nil {
		return -1, fmt.Errorf("run powershell.exe: %w", err)
	}
	return 0, nil
}
