package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/retry"
)

// The identity of the kube-proxy services swdt join registers: one
// ServiceAccount in kube-system bound to the node-proxier role, as
// kubeadm binds its kube-proxy DaemonSet's, with one long-lived token
// Secret per node (a Windows service has no projected token to renew).
const (
	KubeProxyServiceAccount = "swdt-kube-proxy"
	kubeProxyBinding        = "swdt:node-proxier"
	kubeProxyRole           = "system:node-proxier"
	kubeProxyNodeLabel      = "windows.k8s.io/swdt-kube-proxy-node"
)

// KubeProxySecret is the token Secret of the kube-proxy of node.
func KubeProxySecret(node string) string { return KubeProxyServiceAccount + "-" + node }

// KubeProxyKubeconfig is the kubeconfig of the kube-proxy service of node:
// the API server, its CA and the token of a Secret of type
// kubernetes.io/service-account-token that the controller manager fills
// (created, with the ServiceAccount and its binding, when missing). The
// same token is reused on later runs, so the file does not change.
func (c *Cluster) KubeProxyKubeconfig(ctx context.Context, node string, wait time.Duration) ([]byte, error) {
	core := c.client.CoreV1()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: KubeProxyServiceAccount, Namespace: metav1.NamespaceSystem}}
	if _, err := core.ServiceAccounts(metav1.NamespaceSystem).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create ServiceAccount kube-system/%s: %w", KubeProxyServiceAccount, c.explain(err))
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kubeProxyBinding},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: kubeProxyRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: KubeProxyServiceAccount, Namespace: metav1.NamespaceSystem}},
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create ClusterRoleBinding %s: %w", kubeProxyBinding, c.explain(err))
	}
	secrets := core.Secrets(metav1.NamespaceSystem)
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: KubeProxySecret(node), Namespace: metav1.NamespaceSystem,
			Labels:      map[string]string{kubeProxyNodeLabel: node},
			Annotations: map[string]string{corev1.ServiceAccountNameKey: KubeProxyServiceAccount}},
		Type: corev1.SecretTypeServiceAccountToken,
	}
	if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create the token Secret kube-system/%s: %w", s.Name, c.explain(err))
	}
	// The reads run on ctx: the end of wctx is the controller's fault,
	// not the read's.
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var token []byte
	err := retry.Poll(wctx, 200*time.Millisecond, func(context.Context) (bool, error) {
		got, err := secrets.Get(ctx, s.Name, metav1.GetOptions{})
		if err != nil {
			return false, fmt.Errorf("read the token Secret kube-system/%s: %w", s.Name, c.explain(err))
		}
		token = got.Data[corev1.ServiceAccountTokenKey]
		return len(token) > 0, nil
	})
	switch {
	case err == nil:
		return c.tokenKubeconfig("kube-proxy", strings.TrimSpace(string(token)))
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("the controller manager did not put a token into Secret kube-system/%s within %s: is its serviceaccount-token-controller running? (kind, minikube and kubeadm run it)", s.Name, wait)
	}
	return nil, err
}

// DeleteKubeProxyToken deletes the token Secret of node's kube-proxy,
// which revokes the token; it reports whether there was one. The
// ServiceAccount and its binding, shared by every node, stay.
func (c *Cluster) DeleteKubeProxyToken(ctx context.Context, node string) (bool, error) {
	err := c.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, KubeProxySecret(node), metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("delete the token Secret kube-system/%s: %w", KubeProxySecret(node), c.explain(err))
	}
	return true, nil
}
