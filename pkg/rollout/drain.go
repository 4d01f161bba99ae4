package rollout

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/kubeconn"
)

// DefaultDrainTimeout bounds a Node's drain when the drain section sets
// none.
const DefaultDrainTimeout = 5 * time.Minute

// drainNode cordons the Node (recording in the state that swdt did, so
// that a resumed run uncordons it) and evicts its pods through the
// Eviction API, which refuses (429) an eviction a PodDisruptionBudget
// does not allow: that one is asked again until the drain's timeout. It
// then waits for the evicted pods to be gone, and returns how many it
// evicted. DaemonSet pods, mirror pods and finished pods stay, as with
// kubectl drain --ignore-daemonsets, and so does swdt's agent pod.
func (r *run) drainNode(ctx context.Context, name string) (int, error) {
	timeout := DefaultDrainTimeout
	if r.drain.Timeout != nil {
		timeout = r.drain.Timeout.Duration
	}
	if err := r.cordon(ctx, name); err != nil {
		return 0, err
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pods, err := r.evictable(dctx, name)
	if err != nil {
		return 0, err
	}
	evicted := 0
	for _, p := range pods {
		if err := r.evict(dctx, p); err != nil {
			if dctx.Err() != nil && ctx.Err() == nil {
				return evicted, fmt.Errorf("drain Node %s: pod %s/%s was not evicted within %s (%w): check its PodDisruptionBudget, or raise spec.kubernetes.rollout.drain.timeout", name, p.Namespace, p.Name, timeout, err)
			}
			return evicted, fmt.Errorf("drain Node %s: evict pod %s/%s: %w", name, p.Namespace, p.Name, err)
		}
		evicted++
	}
	var left []corev1.Pod
	err = retry.Poll(dctx, r.opts.PollEvery, func(ctx context.Context) (bool, error) {
		left, err = r.evictable(ctx, name)
		return err == nil && len(left) == 0, nil
	})
	if err != nil {
		return evicted, fmt.Errorf("drain Node %s: %d pods still there after %s (%s): raise spec.kubernetes.rollout.drain.timeout, or check why they do not end", name, len(left), timeout, podNames(left))
	}
	return evicted, nil
}

// evictable lists the Node's pods a drain evicts.
func (r *run) evictable(ctx context.Context, name string) ([]corev1.Pod, error) {
	list, err := r.opts.Cluster.Client().CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", name).String()})
	if err != nil {
		return nil, fmt.Errorf("list the pods of Node %s: %w", name, err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
			continue
		}
		if c := metav1.GetControllerOf(&p); c != nil && c.Kind == "DaemonSet" {
			continue
		}
		if p.Namespace == Namespace && p.Name == kubeconn.PodName(name) {
			// swdt's own agent pod (the Kubernetes transport): the swap
			// runs through it.
			continue
		}
		out = append(out, p)
	}
	return out, nil
}

// evict asks for the pod's eviction until the API server allows it (a
// 429 is a PodDisruptionBudget saying not yet) or ctx ends.
func (r *run) evict(ctx context.Context, p corev1.Pod) error {
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	if g := r.drain.GracePeriodSeconds; g != nil {
		ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: g}
	}
	var last error
	err := retry.Poll(ctx, r.opts.PollEvery, func(ctx context.Context) (bool, error) {
		err := r.opts.Cluster.Client().PolicyV1().Evictions(p.Namespace).Evict(ctx, ev)
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return true, nil
		case apierrors.IsTooManyRequests(err):
			last = err
			return false, nil
		}
		return false, err
	})
	if err != nil && last != nil && ctx.Err() != nil {
		return last
	}
	return err
}

// cordon marks the Node unschedulable. A Node that already was is left
// as it is, and uncordon will leave it so too.
func (r *run) cordon(ctx context.Context, name string) error {
	n, err := r.opts.Cluster.Client().CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("cordon Node %s: %w", name, err)
	}
	if n.Spec.Unschedulable {
		return nil
	}
	if err := r.state.update(ctx, name, func(ns *NodeState) { ns.Cordoned = true }); err != nil {
		return err
	}
	return r.setUnschedulable(ctx, name, true)
}

// uncordon makes the Node schedulable again when swdt cordoned it.
func (r *run) uncordon(ctx context.Context, name string) error {
	if !r.state.cordoned(name) {
		return nil
	}
	if err := r.setUnschedulable(ctx, name, false); err != nil {
		return err
	}
	return r.state.update(ctx, name, func(ns *NodeState) { ns.Cordoned = false })
}

func (r *run) setUnschedulable(ctx context.Context, name string, on bool) error {
	// An interrupted run still puts a Node it drained back into service.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%t}}`, on)
	_, err := r.opts.Cluster.Client().CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		verb := "uncordon"
		if on {
			verb = "cordon"
		}
		return fmt.Errorf("%s Node %s: %w", verb, name, err)
	}
	return nil
}

func podNames(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return strings.Join(out, ", ")
}
