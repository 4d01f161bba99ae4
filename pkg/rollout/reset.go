package rollout

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/kubeconn"
)

// ResetReport says what Reset deleted.
type ResetReport struct {
	// State is true when the rollout's state ConfigMap was deleted.
	State bool
	// Namespace is true when swdt's namespace was reset (kubeconn.Reset:
	// deleted when swdt created it, else swdt's pods and account in it).
	Namespace bool
	// Kept names the other rollouts whose state keeps the namespace; the
	// pods of the Nodes this rollout selects are deleted instead (Pods).
	Kept []string
	// Pods are the Nodes whose agent pod was deleted while the namespace
	// was kept.
	Pods []string
}

// Reset removes what the rollout of spec left in the cluster: its state
// ConfigMap, and what the Kubernetes transport created (kopts give its
// kubeconfig and context): swdt's namespace, unless another rollout's
// state is kept there, in which case only the agent pods of the Nodes
// this rollout selects. The Nodes themselves are not touched.
func Reset(ctx context.Context, spec *v1alpha1.Node, opts Options, kopts kubeconn.Options) (*ResetReport, error) {
	r, err := newRun(spec, opts)
	if err != nil {
		return nil, err
	}
	client := opts.Cluster.Client()
	rep := &ResetReport{}
	name := ConfigMapName(spec.Name)
	err = client.CoreV1().ConfigMaps(Namespace).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case err == nil:
		rep.State = true
	case !apierrors.IsNotFound(err):
		return rep, fmt.Errorf("delete the rollout's state (ConfigMap %s/%s): %w", Namespace, name, err)
	}
	others, err := client.CoreV1().ConfigMaps(Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelRollout})
	if err != nil && !apierrors.IsNotFound(err) {
		return rep, fmt.Errorf("list the rollouts' state in namespace %s: %w", Namespace, err)
	}
	if err == nil {
		for _, cm := range others.Items {
			if cm.Name != name && cm.DeletionTimestamp == nil {
				rep.Kept = append(rep.Kept, cm.Labels[LabelRollout])
			}
		}
	}
	kopts.Namespace = Namespace
	if len(rep.Kept) == 0 {
		if rep.Namespace, err = kubeconn.Reset(ctx, kopts); err != nil {
			return rep, err
		}
		return rep, nil
	}
	names, err := r.selectNodes(ctx)
	if err != nil {
		return rep, err
	}
	for _, n := range names {
		o := kopts
		o.Node = n
		found, err := kubeconn.ResetNode(ctx, o)
		if err != nil {
			return rep, err
		}
		if found {
			rep.Pods = append(rep.Pods, n)
		}
	}
	return rep, nil
}
