package kubeconn

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// access is one thing the transport does through the API: a verb on a
// resource (and subresource), in the namespace or cluster-wide.
type access struct {
	verb, resource, subresource string
	namespaced                  bool
}

func (a access) String() string {
	r := a.resource
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	return a.verb + " " + r
}

// needed is every right Dial, the calls and Reset use (docs/rollout.md,
// "What a user needs").
var needed = []access{
	{verb: "get", resource: "nodes"},
	{verb: "get", resource: "namespaces"},
	{verb: "create", resource: "namespaces"},
	{verb: "delete", resource: "namespaces"},
	{verb: "create", resource: "serviceaccounts", namespaced: true},
	{verb: "delete", resource: "serviceaccounts", namespaced: true},
	{verb: "get", resource: "pods", namespaced: true},
	{verb: "list", resource: "pods", namespaced: true},
	{verb: "create", resource: "pods", namespaced: true},
	{verb: "delete", resource: "pods", namespaced: true},
	{verb: "create", resource: "pods", subresource: "exec", namespaced: true},
}

// Rights are the rights Dial, the calls and Reset need, as a
// SelfSubjectAccessReview asks them, the namespaced ones in namespace
// (DefaultNamespace when empty): a workflow that reaches many nodes checks
// them with its own before anything changes.
func Rights(namespace string) []authorizationv1.ResourceAttributes {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	out := make([]authorizationv1.ResourceAttributes, 0, len(needed))
	for _, a := range needed {
		attrs := authorizationv1.ResourceAttributes{Verb: a.verb, Resource: a.resource, Subresource: a.subresource}
		if a.namespaced {
			attrs.Namespace = namespace
		}
		out = append(out, attrs)
	}
	return out
}

// AccessError lists the rights the kubeconfig's user lacks.
type AccessError struct {
	// Namespace is the transport's namespace; Missing the rights, as
	// "VERB RESOURCE[/SUBRESOURCE]" with where.
	Namespace string
	Missing   []string
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("your kubeconfig's user may not %s; nothing was changed: ask a cluster administrator to bind you a role with them "+
		"(docs/rollout.md, \"What a user needs\", has a ClusterRole with them)", strings.Join(e.Missing, ", "))
}

// checkAccess asks the API server (SelfSubjectAccessReview) whether the
// user may do each thing the transport does, before it does any of them.
func (c *Conn) checkAccess(ctx context.Context) error {
	var missing []string
	rights := Rights(c.opts.Namespace)
	for i, a := range needed {
		attrs := &rights[i]
		where := "cluster-wide"
		if a.namespaced {
			where = "in namespace " + c.opts.Namespace
		}
		r, err := c.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
		}, metav1.CreateOptions{})
		if err != nil {
			if apierrors.IsForbidden(err) {
				return fmt.Errorf("your kubeconfig's user may not ask the API server what it may do (create selfsubjectaccessreviews): %w", err)
			}
			return fmt.Errorf("ask the API server whether you may %s: %w", a, err)
		}
		if !r.Status.Allowed {
			missing = append(missing, a.String()+" "+where)
		}
	}
	if len(missing) > 0 {
		return &AccessError{Namespace: c.opts.Namespace, Missing: missing}
	}
	return nil
}
