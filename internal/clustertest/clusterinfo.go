package clustertest

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/swdt/internal/retry"
)

// createClusterInfo creates kube-public/cluster-info as kubeadm init's
// bootstrap-token phase does: a ConfigMap whose key kubeconfig is a
// kubeconfig with one unnamed cluster (NodeServer and the CA, no user),
// and the Role and RoleBinding that let anonymous users get it. The
// controller manager's bootstrap signer adds the tokens' signatures.
func (c *Cluster) createClusterInfo() error {
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: c.NodeServer, CertificateAuthorityData: ca}
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns, name = metav1.NamespacePublic, "cluster-info"
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"kubeconfig": string(raw)}}
	// The API server creates kube-public shortly after it is ready.
	err = retry.Poll(ctx, 200*time.Millisecond, func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		return err == nil || apierrors.IsAlreadyExists(err), nil
	})
	if err != nil {
		return fmt.Errorf("create ConfigMap %s/%s: %w", ns, name, err)
	}
	const role = "kubeadm:bootstrap-signer-clusterinfo"
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{name}}}}
	if _, err := c.Client.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Role %s: %w", role, err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:anonymous"}}}
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create RoleBinding %s: %w", role, err)
	}
	return nil
}
