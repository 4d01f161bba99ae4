package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// hypervOps are the handlers of the Hyper-V host ops. Hyper-V offers no
// API swdt calls from Go, so each runs the fixed script of the same name
// (pkg/winos) with the request as JSON on its stdin, under a time limit,
// and turns the failure the script reports into a Failure of its kind.
var hypervOps = []entry{
	handle(ops.HyperVVMStatus, hypervScript[ops.HyperVVMRequest, ops.HyperVVMInfo](winos.ScriptHyperVVMStatus, hypervLimit)),
	handle(ops.HyperVVMStart, hypervScript[ops.HyperVVMRequest, ops.HyperVStartResponse](winos.ScriptHyperVVMStart, hypervLimit)),
	handle(ops.HyperVVMStop, hypervScript[ops.HyperVStopRequest, ops.HyperVStopResponse](winos.ScriptHyperVVMStop, hypervStopLimit)),
	handle(ops.HyperVCheckpointCreate, hypervScript[ops.HyperVCheckpointRequest, ops.HyperVCheckpoint](winos.ScriptHyperVCheckpointCreate, hypervLimit)),
	handle(ops.HyperVCheckpointRestore, hypervScript[ops.HyperVCheckpointRequest, ops.HyperVVMInfo](winos.ScriptHyperVCheckpointRestore, hypervLimit)),
	handle(ops.HyperVCheckpointList, hypervScript[ops.HyperVVMRequest, ops.HyperVCheckpointsResponse](winos.ScriptHyperVCheckpointList, hypervLimit)),
	handle(ops.HyperVVMAddresses, hypervScript[ops.HyperVVMRequest, ops.HyperVAddressesResponse](winos.ScriptHyperVVMAddresses, hypervLimit)),
}

// hypervOpLimit bounds one Hyper-V script (a stop gets its shutdown
// timeout on top). It stays below pkg/node's default bound of such an op,
// so that a hung cmdlet is reported by the agent as a timeout rather than
// cut off with the connection.
var hypervOpLimit = 90 * time.Second

// hypervLimit is the time limit of every Hyper-V script but the stop.
func hypervLimit[Req any](Req) time.Duration { return hypervOpLimit }

// hypervStopLimit is the stop script's time limit: the shutdown timeout
// it waits, then the time to turn the VM off.
func hypervStopLimit(req ops.HyperVStopRequest) time.Duration {
	return time.Duration(max(req.TimeoutSeconds, 0))*time.Second + hypervOpLimit
}

// installHyperV says how to get Hyper-V's PowerShell module, or do without.
const installHyperV = "install Hyper-V with its management tools (Install-WindowsFeature Hyper-V -IncludeManagementTools; on Windows 10/11 " +
	"Enable-WindowsOptionalFeature -Online -FeatureName Microsoft-Hyper-V-All), or point spec.vm.hyperv.host at a Hyper-V host"

// hypervOutput is the one JSON line a Hyper-V script prints.
type hypervOutput struct {
	Data  json.RawMessage    `json:"data"`
	Error *ops.EnvelopeError `json:"error"`
}

// hypervScript returns the handler that runs script s for a request, with
// the time limit limit gives it, and decodes the script's result.
func hypervScript[Req, Resp any](s winos.Script, limit func(Req) time.Duration) func(context.Context, winos.OS, Req) (Resp, error) {
	return func(ctx context.Context, w winos.OS, req Req) (Resp, error) {
		var resp Resp
		input, err := json.Marshal(req)
		if err != nil {
			return resp, fmt.Errorf("encode the input of script %s: %w", s.Name(), err)
		}
		bound := limit(req)
		res, expired, err := scriptBounded(ctx, w, bound, s, input)
		if c := winos.Code(err); c == winos.ErrFileNotFound || c == winos.ErrPathNotFound {
			// No Windows PowerShell (a Server Core without it, Wine):
			// Hyper-V's module cannot be there either.
			return resp, Fail(ops.KindNoHyperV, "this host has no Windows PowerShell (%v), which Hyper-V's management module needs: %s", err, installHyperV)
		}
		if err != nil {
			return resp, fmt.Errorf("run script %s: %w", s.Name(), err)
		}
		if expired {
			return resp, Fail(ops.KindTimeout, "the %s script did not finish within %s and was stopped: Hyper-V on this host does not answer; "+
				"check it in Hyper-V Manager or with Get-VM, then run swdt again", s.Name(), bound)
		}
		out, ok := hypervResult(res.Stdout)
		if !ok && len(bytes.TrimSpace(res.Stdout)) == 0 && len(bytes.TrimSpace(res.Stderr)) == 0 {
			// Every script prints a result or an error: a powershell.exe
			// that prints nothing at all is a stub (Wine's), not Windows
			// PowerShell, and has no Hyper-V module.
			return resp, Fail(ops.KindNoHyperV, "powershell.exe on this host ran the %s script and printed nothing (exit code %d): it is not Windows PowerShell with Hyper-V's module: %s",
				s.Name(), res.ExitCode, installHyperV)
		}
		if !ok {
			return resp, Fail(ops.KindException, "the %s script printed no result (exit code %d): %s",
				s.Name(), res.ExitCode, lastBytes(printed(res), 1500))
		}
		if out.Error != nil {
			kind := out.Error.Kind
			if kind == "" {
				kind = ops.KindException
			}
			return resp, Fail(kind, "%s", out.Error.Message)
		}
		if err := json.Unmarshal(out.Data, &resp); err != nil {
			return resp, Fail(ops.KindException, "the %s script's result %s does not decode: %v", s.Name(), lastBytes(string(out.Data), 400), err)
		}
		return resp, nil
	}
}

// hypervResult finds the script's result: the last line of stdout that is
// a JSON object with data or an error. Anything a cmdlet printed before
// it is ignored.
func hypervResult(stdout []byte) (hypervOutput, bool) {
	lines := bytes.Split(stdout, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := bytes.TrimSpace(lines[i])
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var out hypervOutput
		if json.Unmarshal(line, &out) == nil && (out.Error != nil || len(out.Data) > 0) {
			return out, true
		}
	}
	return hypervOutput{}, false
}
