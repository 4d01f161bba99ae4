package kubeconn_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/kubeconn"
)

// transportRules are the rights docs/rollout.md's ClusterRole grants.
var transportRules = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
	{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"create", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "create", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create"}},
}

// TestRefusedWithoutRBAC: a user who may not do all the transport does
// is refused before anything changes, told each missing right and what
// to do; with the documented rights it gets through.
func TestRefusedWithoutRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := clustertest.Start(t)
	c.StartKubeletNode(t, "win-01")
	ctx := testContext(t)
	for _, tc := range []struct {
		name        string
		rules       []rbacv1.PolicyRule
		wantMissing []string
	}{
		{name: "no rights", wantMissing: []string{"get nodes cluster-wide", "create namespaces cluster-wide",
			"create pods in namespace swdt-system", "create pods/exec in namespace swdt-system"}},
		{name: "all but exec", rules: transportRules[:4], wantMissing: []string{"create pods/exec in namespace swdt-system"}},
		{name: "the documented rights", rules: transportRules},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := strings.ReplaceAll(tc.name, " ", "-")
			if tc.rules != nil {
				role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: tc.rules}
				if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
				binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
					RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
					Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
				if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			_, err := kubeconn.Dial(ctx, kubeconn.Options{Kubeconfig: c.UserKubeconfig(t, user), Node: "win-01"})
			if tc.wantMissing == nil {
				if err != nil {
					t.Fatalf("Dial with the documented rights: %v", err)
				}
				return
			}
			var ae *kubeconn.AccessError
			if !errors.As(err, &ae) {
				t.Fatalf("Dial: %v (%T), want a *kubeconn.AccessError", err, err)
			}
			for _, m := range tc.wantMissing {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not name %q", err, m)
				}
			}
			if len(tc.rules) > 0 && len(ae.Missing) != len(tc.wantMissing) {
				t.Errorf("missing %q, want only %q", ae.Missing, tc.wantMissing)
			}
			if !strings.Contains(err.Error(), "nothing was changed") || !strings.Contains(err.Error(), "What a user needs") {
				t.Errorf("error %q does not say that nothing changed and where the rights are documented", err)
			}
			if _, err := c.Client.CoreV1().Namespaces().Get(ctx, kubeconn.DefaultNamespace, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("namespace %s after the refusal: %v, want none", kubeconn.DefaultNamespace, err)
			}
		})
	}
}

// TestRefusedByPodSecurity: a namespace whose Pod Security level forbids
// HostProcess pods is refused by the API server's admission, and the
// error says how to label it; labelled so, the same call gets through.
func TestRefusedByPodSecurity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := clustertest.Start(t)
	c.StartKubeletNode(t, "win-01")
	ctx := testContext(t)
	for _, level := range []string{"baseline", "restricted"} {
		t.Run(level, func(t *testing.T) {
			ns := "swdt-" + level
			_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
				Labels: map[string]string{kubeconn.LabelEnforce: level}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			opts := kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: "win-01", Namespace: ns}
			_, err = kubeconn.Dial(ctx, opts)
			var pse *kubeconn.PodSecurityError
			if !errors.As(err, &pse) || pse.Level != level {
				t.Fatalf("Dial into a %s namespace: %v (%T), want a *kubeconn.PodSecurityError of level %s", level, err, err, level)
			}
			fix := "kubectl label --overwrite namespace " + ns + " pod-security.kubernetes.io/enforce=privileged"
			if !strings.Contains(err.Error(), fix) || !strings.Contains(err.Error(), "violates PodSecurity") {
				t.Errorf("error %q does not give the fix %q and the API server's reason", err, fix)
			}
			pods, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(pods.Items) != 0 {
				t.Fatalf("pods in %s after the refusal: %v, %v", ns, pods, err)
			}
			n, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n.Labels[kubeconn.LabelEnforce] = "privileged"
			if _, err := c.Client.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := kubeconn.Dial(ctx, opts); err != nil {
				t.Fatalf("Dial once the namespace is labelled as the error says: %v", err)
			}
			// Reset leaves a namespace swdt did not create, deleting only
			// what it put there.
			if found, err := kubeconn.Reset(ctx, opts); err != nil || !found {
				t.Fatalf("Reset: %v, %v", found, err)
			}
			n, err = c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			if err != nil || n.DeletionTimestamp != nil {
				t.Errorf("namespace %s after Reset: %v, %v; want it kept", ns, n.DeletionTimestamp, err)
			}
			if _, err := c.Client.CoreV1().ServiceAccounts(ns).Get(ctx, kubeconn.ServiceAccount, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("service account after Reset: %v, want it deleted", err)
			}
		})
	}
}
