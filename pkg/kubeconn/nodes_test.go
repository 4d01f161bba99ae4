package kubeconn_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/node"
)

// TestSeveralNodesAndReset: each node of a cluster is reached through a
// pod pinned to it, at once, each op landing on its own node; ResetNode
// deletes one node's pod only, and Reset then the namespace swdt created.
func TestSeveralNodesAndReset(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := clustertest.Start(t)
	names := []string{"win-01", "win-02", "win-03"}
	for _, name := range names {
		c.StartKubeletNode(t, name)
	}
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Go(func() {
			conn, err := kubeconn.Dial(ctx, kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: name})
			if err != nil {
				errs[i] = err
				return
			}
			facts, err := node.New(name, conn, nil).Facts(ctx)
			if err == nil && facts.Hostname != strings.ToUpper(name) {
				err = fmt.Errorf("facts of %s name the computer %s", name, facts.Hostname)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %s: %v", names[i], err)
		}
	}
	pods, err := c.Client.CoreV1().Pods(kubeconn.DefaultNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pinned := map[string]string{}
	for _, p := range pods.Items {
		pinned[p.Name] = p.Spec.NodeName
	}
	for _, name := range names {
		if pinned[kubeconn.PodName(name)] != name {
			t.Errorf("pods and their nodes: %v, want %s on %s", pinned, kubeconn.PodName(name), name)
		}
	}
	// One Node's reset deletes its pod only.
	if found, err := kubeconn.ResetNode(ctx, kubeconn.Options{Kubeconfig: c.Kubeconfig, Node: names[0]}); err != nil || !found {
		t.Fatalf("Reset of Node %s: %v, %v; want its pod deleted", names[0], found, err)
	}
	if p, err := c.Client.CoreV1().Pods(kubeconn.DefaultNamespace).Get(ctx, kubeconn.PodName(names[0]), metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
		t.Errorf("pod %s after its Node's Reset: not being deleted", p.Name)
	}
	if p, err := c.Client.CoreV1().Pods(kubeconn.DefaultNamespace).Get(ctx, kubeconn.PodName(names[1]), metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("pod of Node %s after the Reset of Node %s: %v, want it kept", names[1], names[0], err)
	}
	if ns, err := c.Client.CoreV1().Namespaces().Get(ctx, kubeconn.DefaultNamespace, metav1.GetOptions{}); err != nil || ns.DeletionTimestamp != nil {
		t.Errorf("namespace %s after the Reset of Node %s: %v, want it kept", kubeconn.DefaultNamespace, names[0], err)
	}
	opts := kubeconn.Options{Kubeconfig: c.Kubeconfig}
	if found, err := kubeconn.Reset(ctx, opts); err != nil || !found {
		t.Fatalf("Reset: %v, %v; want the namespace deleted", found, err)
	}
	ns, err := c.Client.CoreV1().Namespaces().Get(ctx, kubeconn.DefaultNamespace, metav1.GetOptions{})
	if err == nil && ns.DeletionTimestamp == nil {
		t.Fatalf("namespace %s after Reset: not being deleted", kubeconn.DefaultNamespace)
	}
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}
