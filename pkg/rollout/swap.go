package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/hotswap"
)

// swapNode takes one Node through its swap: drain (when asked), the
// hot-swap, the cluster's check, a rollback when either fails, uncordon.
// Its state in the cluster follows each step.
func (r *run) swapNode(ctx context.Context, name string) NodeReport {
	out := NodeReport{Name: name}
	step := func(msg string) { r.opts.Observer.Step(name, msg) }
	interrupted := func(err error) NodeReport {
		// The state keeps the Node swapping: a resumed run does it again.
		out.Result, out.Error = ResultInterrupted, err.Error()
		return out
	}
	fail := func(result string, err error) NodeReport {
		if ctx.Err() != nil {
			return interrupted(fmt.Errorf("interrupted on Node %s: %w", name, err))
		}
		out.Result, out.Error = result, err.Error()
		if serr := r.state.update(ctx, name, func(ns *NodeState) { ns.Phase, ns.Error = PhaseFailed, out.Error }); serr != nil {
			out.Error += "; " + serr.Error()
		}
		return out
	}
	if err := r.state.update(ctx, name, func(ns *NodeState) { ns.Phase, ns.Error = PhaseSwapping, "" }); err != nil {
		return fail(ResultFailed, err)
	}
	c := r.opts.Cluster
	before, err := c.Node(ctx, name)
	if err != nil {
		return fail(ResultFailed, fmt.Errorf("read Node %s before its swap: %w", name, err))
	}
	if r.drain != nil {
		step("cordoning and draining")
		evicted, err := r.drainNode(ctx, name)
		out.Evicted = evicted
		if err != nil {
			// Nothing changed on the Node: it goes back into service.
			return fail(ResultFailed, errors.Join(err, r.uncordon(ctx, name)))
		}
	}
	n, err := r.opts.Connect.Connect(ctx, name, func(msg string) { r.opts.Observer.Warn("node " + name + ": " + msg) })
	if err != nil {
		return fail(ResultFailed, errors.Join(fmt.Errorf("connect to Node %s: %w", name, err), r.uncordon(ctx, name)))
	}
	defer n.Close()
	opts := r.opts.Swap
	opts.Command, opts.DryRun, opts.Observer = "swdt rollout", false, stepObserver{step: step}
	step("swapping " + strings.Join(r.report.Provisioners, ", "))
	rep, err := hotswap.Run(ctx, n, r.items, opts)
	if ctx.Err() != nil {
		return interrupted(fmt.Errorf("interrupted during the swap of Node %s", name))
	}
	if err != nil {
		return fail(ResultFailed, fmt.Errorf("swap on Node %s: %w", name, err))
	}
	out.Provisioners = provisioners(rep)
	if rep.Failures() > 0 {
		// The engine rolled back what failed its start or health checks.
		err := fmt.Errorf("the swap failed on Node %s: %s", name, failures(rep))
		return fail(r.rolledBack(ctx, c, name, before, rep, err))
	}
	if !changed(rep) {
		out.Result = ResultUnchanged
	} else {
		step(fmt.Sprintf("waiting for Node %s to confirm the swap (up to %s)", name, r.gate))
		err := r.confirm(ctx, c, name, before)
		if ctx.Err() != nil {
			return interrupted(fmt.Errorf("interrupted while Node %s was being checked; the swap stays", name))
		}
		if err != nil {
			for i := len(rep.Results) - 1; i >= 0; i-- {
				hotswap.Undo(ctx, n, rep, rep.Results[i].Name, err.Error(), opts)
			}
			out.Provisioners = provisioners(rep)
			return fail(r.rolledBack(ctx, c, name, before, rep, err))
		}
		out.Result = ResultChanged
	}
	if err := r.uncordon(ctx, name); err != nil {
		return fail(ResultFailed, err)
	}
	if err := r.state.update(ctx, name, func(ns *NodeState) { ns.Phase = PhaseDone }); err != nil {
		out.Result, out.Error = ResultFailed, err.Error()
	}
	return out
}

// confirm waits until the cluster confirms the swap (the gate of swdt
// join's kubelet swap): the kubelet provisioner's version as the Node's
// kubeletVersion (when rolled and set), a Lease renewed after the one seen
// right after the swap, and Ready when it was Ready before.
func (r *run) confirm(ctx context.Context, c *cluster.Cluster, name string, before cluster.NodeState) error {
	wctx, cancel := context.WithTimeout(ctx, r.gate)
	defer cancel()
	baseline, err := c.Node(wctx, name)
	if err != nil {
		return fmt.Errorf("read Node %s after its swap: %w", name, err)
	}
	want := cluster.Want{KubeletVersion: r.kubeletVersion(), Ready: before.Ready == corev1.ConditionTrue, RenewedAfter: baseline.LeaseRenewed}
	if want.RenewedAfter.IsZero() {
		want.RenewedAfter = time.Unix(0, 0) // no Lease yet: any renewal is the new kubelet's
	}
	if _, err := c.WaitNode(wctx, name, want, r.opts.PollEvery); err != nil {
		return fmt.Errorf("the cluster did not confirm the swap within %s: %w", r.gate, err)
	}
	return nil
}

// rolledBack finishes a Node whose swap was rolled back because of why:
// once the cluster sees the old kubelet again, a Node whose every item is
// back as it was goes back into service (uncordoned). It returns the
// Node's result and error.
func (r *run) rolledBack(ctx context.Context, c *cluster.Cluster, name string, before cluster.NodeState, rep *hotswap.Report, why error) (string, error) {
	result := resultOf(rep)
	err := r.backAsBefore(ctx, c, name, before)
	if result == ResultRolledBack && err == nil {
		err = r.uncordon(ctx, name)
	}
	return result, errors.Join(why, err)
}

// backAsBefore waits, after a rollback, for the Node to report the
// kubelet it reported before the swap, so that the report says what it
// runs; an error says it does not.
func (r *run) backAsBefore(ctx context.Context, c *cluster.Cluster, name string, before cluster.NodeState) error {
	if !before.Registered || before.KubeletVersion == "" {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, r.gate)
	defer cancel()
	if _, err := c.WaitNode(wctx, name, cluster.Want{KubeletVersion: before.KubeletVersion}, r.opts.PollEvery); err != nil {
		return fmt.Errorf("after the rollback: %w", err)
	}
	return nil
}

// kubeletVersion is the version the kubelet provisioner's build reports,
// "" when the rollout does not swap the kubelet or its provisioner sets
// none.
func (r *run) kubeletVersion() string {
	for _, p := range r.node.Spec.Kubernetes.Provisioners {
		if p.ServiceName() == "kubelet" && p.Version != "" && slices.Contains(r.report.Provisioners, p.Name) {
			return "v" + strings.TrimPrefix(p.Version, "v")
		}
	}
	return ""
}

// changed reports whether the swap changed anything on the Node.
func changed(rep *hotswap.Report) bool {
	for _, res := range rep.Results {
		if res.Action == hotswap.ActionUpdated || res.Action == hotswap.ActionReconfigured {
			return true
		}
	}
	return false
}

// resultOf is rolled-back when every failed item is back to what it was,
// else failed.
func resultOf(rep *hotswap.Report) string {
	for _, res := range rep.Results {
		if res.Action == hotswap.ActionFailed {
			return ResultFailed
		}
	}
	return ResultRolledBack
}

func failures(rep *hotswap.Report) string {
	var out []string
	for _, res := range rep.Results {
		if res.Failed() {
			out = append(out, fmt.Sprintf("%s %s: %s", res.Name, res.Action, res.Error))
		}
	}
	return strings.Join(out, "; ")
}

func provisioners(rep *hotswap.Report) []Provisioner {
	out := make([]Provisioner, 0, len(rep.Results))
	for _, res := range rep.Results {
		out = append(out, Provisioner{Name: res.Name, Action: res.Action, Error: res.Error})
	}
	return out
}

// stepObserver passes the engine's steps on as the Node's.
type stepObserver struct{ step func(string) }

func (o stepObserver) Planned(*hotswap.Plan)                {}
func (o stepObserver) Step(msg string)                      { o.step(msg) }
func (o stepObserver) Upload(hotswap.Item) func(sent int64) { return func(int64) {} }
