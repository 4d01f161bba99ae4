package simnode

import (
	"context"
	"errors"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/winos"
)

// What happens to an agent whose session ends, and the fault that stops
// one at a chosen step.
//
// On Windows, sshd runs a session's processes in a job object and ends
// them all when the session ends: a swdt killed in the middle of a swap,
// or a node that drops off the network, kills the agent at whatever it
// was doing. simnode runs the agent's handlers in-process, so it models
// that death instead: once the session's context ends, every call that
// would change the machine fails and changes nothing (agentOS). What a
// killed agent did is exactly what it did before its session ended.

// AgentHold stops the agent at one step of an op: right after its Count-th
// (1 when 0) call of Call whose target contains Target (any target when
// empty), the call returns and the agent waits, changing nothing more,
// until its session ends; with Cut the SSH connection is closed there and
// then, as when the node drops off the network. Call is a winos.OS method
// that changes the machine: StopService, StartService, Rename, Remove,
// WriteFile, KillProcess, SetRecovery. The hold applies once and is then
// cleared.
type AgentHold struct {
	Op     string `json:"op"`
	Call   string `json:"call"`
	Target string `json:"target,omitempty"`
	Count  int    `json:"count,omitempty"`
	Cut    bool   `json:"cut,omitempty"`
}

// HoldsReached is how many AgentHold faults agents have reached on this
// node: a test waits for it before it kills swdt.
func (n *Node) HoldsReached() int {
	return int(n.m.holdsReached.Load())
}

// agentOS is the Windows layer of one agent invocation: the node's, until
// the invocation's session ends.
type agentOS struct {
	winos.OS
	ctx  context.Context
	m    *machine
	op   string
	cut  func()
	seen int
	held bool
}

// errAgentKilled is what a call of a killed agent returns.
var errAgentKilled = errors.New("simnode: the agent was killed (its SSH session ended)")

// do runs one call that changes the machine, unless the agent is dead,
// and holds it afterwards when an AgentHold names this step.
func (a *agentOS) do(call, target string, fn func() error) error {
	if a.held || a.ctx.Err() != nil {
		return errAgentKilled
	}
	err := fn()
	h := a.m.faults().HoldAgent
	if h == nil || h.Op != a.op || h.Call != call || !strings.Contains(strings.ToLower(target), strings.ToLower(h.Target)) {
		return err
	}
	a.seen++
	if a.seen < max(h.Count, 1) {
		return err
	}
	_ = a.m.updateFaults(func(f *Faults) { f.HoldAgent = nil })
	a.held = true
	a.m.holdsReached.Add(1)
	a.m.log.Info("fault: agent held", "op", a.op, "call", call, "target", target, "cut", h.Cut)
	if h.Cut {
		a.cut()
	}
	<-a.ctx.Done()
	// Give the client's side of the cut time to notice first.
	time.Sleep(10 * time.Millisecond)
	return err
}

func (a *agentOS) StartService(name string) error {
	return a.do("StartService", name, func() error { return a.OS.StartService(name) })
}

func (a *agentOS) StopService(name string) error {
	return a.do("StopService", name, func() error { return a.OS.StopService(name) })
}

func (a *agentOS) SetRecovery(name string, r winos.Recovery) error {
	return a.do("SetRecovery", name, func() error { return a.OS.SetRecovery(name, r) })
}

func (a *agentOS) KillProcess(pid int) error {
	return a.do("KillProcess", "", func() error { return a.OS.KillProcess(pid) })
}

func (a *agentOS) Run(ctx context.Context, cmd winos.Command) (winos.Result, error) {
	var res winos.Result
	err := a.do("Run", cmd.Path, func() (err error) { res, err = a.OS.Run(ctx, cmd); return err })
	return res, err
}

func (a *agentOS) RunScript(ctx context.Context, s winos.Script, input []byte) (winos.Result, error) {
	var res winos.Result
	err := a.do("RunScript", "", func() (err error) { res, err = a.OS.RunScript(ctx, s, input); return err })
	return res, err
}

func (a *agentOS) WriteFile(p string, data []byte) error {
	return a.do("WriteFile", p, func() error { return a.OS.WriteFile(p, data) })
}

func (a *agentOS) Rename(oldPath, newPath string) error {
	return a.do("Rename", oldPath, func() error { return a.OS.Rename(oldPath, newPath) })
}

func (a *agentOS) Remove(p string) error {
	return a.do("Remove", p, func() error { return a.OS.Remove(p) })
}

func (a *agentOS) MkdirAll(p string) error {
	return a.do("MkdirAll", p, func() error { return a.OS.MkdirAll(p) })
}

func (a *agentOS) SetACL(p string, acl winos.ACL) error {
	return a.do("SetACL", p, func() error { return a.OS.SetACL(p, acl) })
}

func (a *agentOS) SetOwner(p, sid string) error {
	return a.do("SetOwner", p, func() error { return a.OS.SetOwner(p, sid) })
}

func (a *agentOS) SetRegistryValue(key string, v winos.RegistryValue) error {
	return a.do("SetRegistryValue", key, func() error { return a.OS.SetRegistryValue(key, v) })
}

func (a *agentOS) SetFirewallRules(ctx context.Context, names []string, enabled bool) error {
	return a.do("SetFirewallRules", "", func() error { return a.OS.SetFirewallRules(ctx, names, enabled) })
}
