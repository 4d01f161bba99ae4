package agent

import (
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/winos"
)

// A service's process may be a wrapper that runs the real program below
// it: nssm.exe starts its Parameters\Application as a child, and
// PrepareNode.ps1's kubelet service is nssm running powershell.exe
// running StartKubelet.ps1, which starts kubelet.exe. nssm ends that tree
// only on an orderly stop; TerminateProcess ends one process and leaves
// its children running with their binaries open. So the swap notes the
// service's whole tree before it stops the service, waits until every
// process of it has exited, and kills all of them when it must kill.

// procRef is one process of a service's tree, as first seen: Windows
// reuses process IDs, so the image name tells the same process from a
// later one with its PID.
type procRef struct {
	pid  int
	name string
	// started is its creation time (zero when unknown): a later process
	// given its PID is not this one.
	started time.Time
}

// wrapperNames are the service wrappers swdt knows: programs that run the
// real program as their child (nssm, and kube-log-runner, which runs the
// kubelet or kube-proxy of a join with its output in a file).
var wrapperNames = []string{"nssm.exe", logRunnerName}

// isWrapper reports whether the file name is a service wrapper's.
func isWrapper(name string) bool { return swapContains(wrapperNames, name) }

// shellNames are programs a wrapper may run to start the real program.
var shellNames = []string{"powershell.exe", "pwsh.exe", "cmd.exe", "conhost.exe"}

// isShell reports whether the file name is a shell (or a console host).
func isShell(name string) bool { return swapContains(shellNames, name) }

// processDescendants lists the processes below pid in one snapshot,
// parents before their children. Windows keeps a process's parent ID
// after the parent ended and reuses PIDs: a process that started before
// the one now holding its parent's PID is not that one's child (nssm
// checks the same).
func processDescendants(procs []winos.Process, pid int) []winos.Process {
	started := map[int]time.Time{}
	for _, p := range procs {
		started[p.PID] = p.Started
	}
	var out []winos.Process
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, p := range procs {
			if p.ParentPID != parent || seen[p.PID] {
				continue
			}
			if ps := started[parent]; !ps.IsZero() && !p.Started.IsZero() && p.Started.Before(ps) {
				continue // its real parent ended, and parent got its PID since
			}
			seen[p.PID] = true
			out = append(out, p)
			queue = append(queue, p.PID)
		}
	}
	return out
}

// procName is a process's image file name.
func procName(p winos.Process) string {
	if p.Name != "" {
		return p.Name
	}
	return winpath.Base(p.Path)
}

// serviceTree lists the processes below a service's process pid.
func (p *stopper) serviceTree(pid int) ([]procRef, error) {
	if pid == 0 {
		return nil, nil
	}
	procs, err := p.w.Processes()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	var tree []procRef
	for _, pr := range processDescendants(procs, pid) {
		tree = append(tree, procRef{pid: pr.PID, name: procName(pr), started: pr.Started})
	}
	return tree, nil
}

// treeRuns reports whether the service's process pid (running exe) or
// any process of its tree still runs.
func (p *stopper) treeRuns(pid int, exe string, tree []procRef) (bool, error) {
	if runs, err := p.processRuns(pid, exe); err != nil || runs {
		return runs, err
	}
	for _, t := range tree {
		if runs, err := p.processRuns(t.pid, t.name); err != nil || runs {
			return runs, err
		}
	}
	return false, nil
}

// killTree kills every process of a tree that still runs, parents first
// (a wrapper whose child is killed first restarts it).
func (p *stopper) killTree(tree []procRef) error {
	for _, t := range tree {
		runs, err := p.processRuns(t.pid, t.name)
		if err != nil {
			return err
		}
		if !runs {
			continue
		}
		if err := p.w.KillProcess(t.pid, t.started); err != nil && winos.Code(err) != winos.ErrInvalidParameter {
			return fmt.Errorf("kill process %d (%s): %w", t.pid, t.name, err)
		}
	}
	return nil
}

// Ways a service runs its program (ops.ServiceInfo.Via).
const (
	viaNSSM           = "nssm"
	viaNSSMPowerShell = "nssm + PowerShell"
	viaLogRunner      = "kube-log-runner"
)

// serviceProgram is the program a service runs: its command line's
// executable or, when that is nssm (which wraps a program that is not a
// service), the program nssm starts; wrapper is then nssm's path and via
// says how. When nssm starts a shell (PrepareNode.ps1's powershell.exe
// running StartKubelet.ps1), the program is the first process below the
// service's that is no shell, while the service runs, and unknown ("")
// while it does not.
func serviceProgram(w winos.OS, svc winos.Service) (executable, wrapper, via string) {
	exe := serviceExecutable(svc.CommandLine)
	if strings.EqualFold(winpath.Base(exe), logRunnerName) {
		return logRunnerProgram(splitCommandLine(svc.CommandLine)), exe, viaLogRunner
	}
	if !isWrapper(winpath.Base(exe)) {
		return exe, "", ""
	}
	v, err := w.RegistryValue(`SYSTEM\CurrentControlSet\Services\`+svc.Name+`\Parameters`, "Application")
	if err != nil || v.String == "" {
		return "", exe, viaNSSM // wrapped, and what it wraps is unknown
	}
	if !isShell(winpath.Base(v.String)) {
		return v.String, exe, viaNSSM
	}
	via = viaNSSM + " + " + shellTitle(winpath.Base(v.String))
	if svc.PID == 0 {
		return "", exe, via
	}
	procs, err := w.Processes()
	if err != nil {
		return "", exe, via
	}
	for _, p := range processDescendants(procs, svc.PID) {
		if !isShell(procName(p)) {
			if p.Path == "" {
				return "", exe, via
			}
			return p.Path, exe, via
		}
	}
	return "", exe, via
}

// shellTitle names a shell as a user would.
func shellTitle(name string) string {
	switch strings.ToLower(name) {
	case "powershell.exe", "pwsh.exe":
		return "PowerShell"
	}
	return name
}
