package rollout

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Right is one thing the kubeconfig's user must be allowed to do.
type Right = authorizationv1.ResourceAttributes

// Rights lists what a rollout does in the cluster: read and select the
// Nodes and their Leases, keep its state in a ConfigMap of swdt's
// namespace (creating the namespace), and with drain cordon Nodes and
// evict their pods. The transport's rights come on top (KubeRights).
func Rights(drain bool) []Right {
	rights := []Right{
		{Verb: "list", Resource: "nodes"},
		{Verb: "get", Resource: "nodes"},
		{Verb: "get", Group: "coordination.k8s.io", Resource: "leases", Namespace: corev1.NamespaceNodeLease},
		{Verb: "get", Resource: "configmaps", Namespace: Namespace},
		{Verb: "create", Resource: "configmaps", Namespace: Namespace},
		{Verb: "update", Resource: "configmaps", Namespace: Namespace},
		{Verb: "create", Resource: "namespaces"},
	}
	if drain {
		rights = append(rights,
			Right{Verb: "patch", Resource: "nodes"},
			Right{Verb: "list", Resource: "pods"},
			Right{Verb: "create", Resource: "pods", Subresource: "eviction"},
		)
	}
	return rights
}

// checkAccess asks the API server (SelfSubjectAccessReview) whether the
// user may do all the rollout and its transport (extra) need, before
// anything changes, and lists every right missing.
func checkAccess(ctx context.Context, client kubernetes.Interface, drain bool, extra []Right) error {
	var missing []string
	for _, r := range append(Rights(drain), extra...) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &r}}
		res, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("ask the API server what the kubeconfig's user may do: %w", err)
		}
		if !res.Status.Allowed {
			missing = append(missing, rightText(r))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the kubeconfig's user may not %s; nothing was changed: grant them (docs/rollout.md, \"What a user needs\") or use another context", strings.Join(missing, ", "))
	}
	return nil
}

// rightText says a right as kubectl auth can-i takes it.
func rightText(r Right) string {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	if r.Group != "" {
		res += "." + r.Group
	}
	s := r.Verb + " " + res
	if r.Namespace != "" {
		s += " in namespace " + r.Namespace
	}
	return s
}
