package simos

import (
	"sync"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// agentTable follows the agents that run on the node: how many of each op
// started, and whether two agents of the swap's ops (service-swap,
// swap-recover) ever changed the machine while both ran, which one
// swap's journal must never see.
type agentTable struct {
	mu      sync.Mutex
	running map[int64]*agentSpan
	starts  map[string]int
	// overlaps counts changes made by a swap agent while another swap
	// agent that had made changes was still running.
	overlaps int
	// changed is closed and replaced whenever an agent starts.
	changed chan struct{}
}

type agentSpan struct {
	op      string
	changed bool
}

// swapOp reports whether op works on the swap journal.
func swapOp(op string) bool { return op == ops.ServiceSwap.Name || op == ops.SwapRecover.Name }

func (t *agentTable) initLocked() {
	if t.running == nil {
		t.running, t.starts, t.changed = map[int64]*agentSpan{}, map[string]int{}, make(chan struct{})
	}
}

func (t *agentTable) begin(id int64, op string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	t.running[id] = &agentSpan{op: op}
	t.starts[op]++
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *agentTable) end(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.running, id)
}

// settled records that agent id's changes so far are done: it released
// the node-wide swap mutex it made them under.
func (t *agentTable) settled(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if me := t.running[id]; me != nil {
		me.changed = false
	}
}

// change records that agent id changes the machine now.
func (t *agentTable) change(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	me := t.running[id]
	if me == nil {
		return
	}
	me.changed = true
	if !swapOp(me.op) {
		return
	}
	for other, s := range t.running {
		if other != id && swapOp(s.op) && s.changed {
			t.overlaps++
			return
		}
	}
}

// started is how many agents of op have started.
func (t *agentTable) started(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.initLocked()
	return t.starts[op]
}

// waitStarted waits until more than n agents of op have started, for a
// minute at most (a test that starts none must not hang the server).
func (t *agentTable) waitStarted(op string, n int) {
	limit := time.After(time.Minute)
	for {
		t.mu.Lock()
		t.initLocked()
		if t.starts[op] > n {
			t.mu.Unlock()
			return
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-limit:
			return
		}
	}
}

// SwapAgentOverlaps counts the times an agent of service-swap or
// swap-recover changed the machine while another such agent, which had
// changed it too, still ran: two agents working on one swap at once.
func (n *Node) SwapAgentOverlaps() int {
	t := &n.h.agents
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.overlaps
}
