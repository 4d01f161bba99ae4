package simos

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/winos"
)

// What happens to an agent whose session ends, and the fault that stops
// one at a chosen step.
//
// OpenSSH for Windows runs a non-PTY command in a job object whose handle
// the session owns, and does not end it when the client goes away: only
// an explicit SSH signal request would, and Windows has no SIGPIPE. A
// swdt killed in the middle of a swap, or a connection that drops, leaves
// the agent running to the end of its op, writing to a pipe nobody reads.
// simnode runs the agent's handlers in-process and does the same: the
// handler's context does not end with the session (agentOS). An agent
// that dies (the node loses power, someone ends the process) is the
// AgentHold fault with Dies, or an agent whose session gets a signal
// request (which OpenSSH for Windows honours by ending the job): every
// call that would change the machine fails and changes nothing, its
// context ends, and the named mutexes it owned are abandoned.

// HoldsReached is how many AgentHold faults agents have reached on this
// node: a test waits for it before it kills swdt.
func (n *Node) HoldsReached() int {
	return int(n.h.holdsReached.Load())
}

// agentOS is the Windows layer of one agent invocation (one process on
// Windows): the node's, until the agent dies.
type agentOS struct {
	winos.OS
	// session ends with the SSH session; kill ends the handler's
	// context (only when the agent dies).
	session context.Context
	kill    context.CancelFunc
	n       *Node
	op      string
	id      int64
	cut     func()
	seen    int
	dead    atomic.Bool
	// signalled is closed by a signal request, before the session ends.
	signalled <-chan struct{}
}

// SignalKey is the context key of the channel closed when the client
// sends the session a signal request.
type SignalKey struct{}

// Agent is the Windows layer and the context of an agent of op started
// in a session with context session; end is called when the agent exits.
// cut drops the session's connection (AgentHold's Cut). A signal request
// on the session kills the agent, as it ends the job.
func (n *Node) Agent(session context.Context, op string, cut func()) (os winos.OS, ctx context.Context, end func()) {
	ctx, kill := context.WithCancel(context.WithoutCancel(session))
	a := &agentOS{OS: n.OS(), session: session, kill: kill, n: n, op: op, id: newMutexOwner(), cut: cut}
	n.h.agents.begin(a.id, op)
	exited := make(chan struct{})
	if signalled, ok := session.Value(SignalKey{}).(<-chan struct{}); ok {
		a.signalled = signalled
		go func() {
			select {
			case <-signalled:
				a.die()
			case <-exited:
			}
		}()
	}
	return a, ctx, func() {
		close(exited)
		kill()
		// A process that ends abandons the mutexes it owns.
		n.h.mutexes.abandonAll(a.id)
		n.h.agents.end(a.id)
	}
}

// die kills the agent: it changes nothing more, its context ends and its
// mutexes are abandoned.
func (a *agentOS) die() {
	a.dead.Store(true)
	a.kill()
	a.n.h.mutexes.abandonAll(a.id)
}

// errAgentKilled is what a call of a killed agent returns.
var errAgentKilled = errors.New("simnode: the agent was killed (AgentHold with Dies)")

// do runs one call that changes the machine, unless the agent is dead,
// and holds it afterwards when an AgentHold names this step.
func (a *agentOS) do(call, target string, fn func() error) error {
	if a.dead.Load() {
		return errAgentKilled
	}
	a.n.h.agents.change(a.id)
	err := fn()
	h := a.n.Faults().HoldAgent
	if h == nil || h.Op != a.op || h.Call != call || !strings.Contains(strings.ToLower(target), strings.ToLower(h.Target)) {
		return err
	}
	a.seen++
	if a.seen < max(h.Count, 1) {
		return err
	}
	_ = a.n.UpdateFaults(func(f *machine.Faults) { f.HoldAgent = nil })
	started := a.n.h.agents.started(h.ResumeWhen)
	a.n.h.holdsReached.Add(1)
	a.n.Log().Info("fault: agent held", "op", a.op, "call", call, "target", target, "cut", h.Cut, "dies", h.Dies)
	if h.Cut {
		a.cut()
	}
	<-a.session.Done()
	select {
	case <-a.signalled:
		// The session ended with a signal: the agent is dead now, not
		// only once the watcher sees it.
		a.die()
		return err
	default:
	}
	if h.Dies {
		a.die()
		// Give the client's side of the cut time to notice first.
		time.Sleep(10 * time.Millisecond)
		return err
	}
	if h.ResumeWhen != "" {
		a.n.h.agents.waitStarted(h.ResumeWhen, started)
	}
	return err
}

// LockMutex takes a named mutex for this agent: its calls share one owner,
// and the mutexes it still owns when it ends are abandoned.
func (a *agentOS) LockMutex(ctx context.Context, name string) (func(), bool, error) {
	if a.dead.Load() {
		return nil, false, errAgentKilled
	}
	return a.n.lockMutex(ctx, name, a.id)
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

func (a *agentOS) KillProcess(pid int, started time.Time) error {
	return a.do("KillProcess", "", func() error { return a.OS.KillProcess(pid, started) })
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
