package app

import (
	"fmt"
	"strings"
	"sync"

	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/provision"
	"sigs.k8s.io/swdt/pkg/ui"
)

// kubeObserver shows a swdt kubernetes run on the terminal: steps, a bar
// per download and per staged file.
type kubeObserver struct {
	progress *ui.Progress

	mu sync.Mutex
	// busy counts the nodes being run now, swaps those whose services
	// are changing (hotswap.SwapObserver); cut is set when Ctrl-C came
	// while a node was being run.
	busy, swaps int
	cut         bool
}

// interrupted records that Ctrl-C came, and whether it cut a swap short.
func (o *kubeObserver) interrupted() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cut = o.cut || o.busy > 0
}

// swapping reports whether a node's services are being swapped now (not
// while it is inspected or staged: an interrupt then changes nothing).
func (o *kubeObserver) swapping() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.swaps > 0
}

// cutShort reports whether Ctrl-C came while a node was being swapped.
func (o *kubeObserver) cutShort() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cut
}

func (o *kubeObserver) Step(node, msg string) { o.progress.Step(node, "%s", msg) }
func (o *kubeObserver) Warn(msg string)       { o.progress.Warn("%s", msg) }
func (o *kubeObserver) Note(msg string)       { o.progress.Note("%s", msg) }

func (o *kubeObserver) Download(what string, total int64) (func(int64), func()) {
	t := o.progress.Transfer(what, total)
	return t.Update, t.End
}

func (o *kubeObserver) Node(name string) provision.NodeObserver {
	o.mu.Lock()
	o.busy++
	o.mu.Unlock()
	var swapped bool
	return &kubeNodeObserver{node: name, progress: o.progress, transfers: map[string]*ui.Transfer{},
		swap: func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			if !swapped {
				swapped = true
				o.swaps++
			}
		},
		done: func() {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.busy--
			if swapped {
				swapped = false
				o.swaps--
			}
		}}
}

// kubeNodeObserver shows one node's run: the plan, its steps and a
// transfer per staged file.
type kubeNodeObserver struct {
	node     string
	progress *ui.Progress

	mu        sync.Mutex
	transfers map[string]*ui.Transfer
	// swap and done tell the kubeObserver that this node's services are
	// about to change, and that its run ended.
	swap, done func()
}

// Swapping implements hotswap.SwapObserver.
func (o *kubeNodeObserver) Swapping() { o.swap() }

func (o *kubeNodeObserver) Planned(plan *hotswap.Plan) {
	var b strings.Builder
	b.WriteString("plan:")
	for _, s := range plan.Steps {
		line := fmt.Sprintf("\n%-12s %-10s %s", s.Item.Name, s.Action, s.Reason)
		if s.Action == hotswap.ActionUpdate && s.Item.Source != nil {
			line += fmt.Sprintf(" (%s -> %s)", ui.Bytes(s.Item.Source.Size), s.Item.Destination)
		}
		b.WriteString(line)
	}
	if len(plan.Updates()) > 0 {
		fmt.Fprintf(&b, "\nstop %s; start %s", orNothing(plan.StopOrder), orNothing(plan.StartOrder))
	}
	o.progress.Step(o.node, "%s", b.String())
}

func orNothing(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}

func (o *kubeNodeObserver) Step(msg string) { o.progress.Step(o.node, "%s", msg) }

func (o *kubeNodeObserver) Upload(item hotswap.Item) func(sent int64) {
	t := o.progress.Transfer(fmt.Sprintf("node %s: stage %s", o.node, item.Name), item.Source.Size)
	o.mu.Lock()
	o.transfers[item.Name] = t
	o.mu.Unlock()
	return t.Update
}

// End finishes transfers that did not complete (a failed upload).
func (o *kubeNodeObserver) End() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, t := range o.transfers {
		t.End()
	}
	if o.done != nil {
		o.done()
		o.done = nil
	}
}
