package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/kubeconn"
	"sigs.k8s.io/swdt/pkg/rollout"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
)

// TestRolloutThroughKubernetesAPI rolls kubelet builds over five Windows
// Nodes reached only through the API server (HostProcess pods and
// pods/exec to their simulated kubelets, the kubelet being swapped
// carrying the stream), from a node file with no SSH credentials:
// maxUnavailable 2 takes every Node to the build with no SSH connection
// opened; an interrupted rollout resumes; a build failing its readiness
// check on the third Node, each Node drained first (swdt's agent pods
// kept), is rolled back there and the rollout stops;
// Reset then removes the state, and swdt's namespace once no other
// rollout's state is kept there.
func TestRolloutThroughKubernetesAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	cl := clustertest.Start(t)
	var names []string
	nodes := map[string]*simnode.TestServer{}
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("win-k%02d", i)
		names = append(names, name)
		nodes[name] = cl.StartKubeletNode(t, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	c, err := cluster.Connect(cl.Kubeconfig, "")
	if err != nil {
		t.Fatal(err)
	}
	kopts := kubeconn.Options{Kubeconfig: cl.Kubeconfig, PodTimeout: 30 * time.Second}
	options := func(obs rollout.Observer) rollout.Options {
		return rollout.Options{Cluster: c, Connect: rollout.KubeConnector(kopts, nil), Access: rollout.KubeRights(),
			Resolver: &source.Resolver{CacheDir: filepath.Join(dir, "cache")}, Observer: obs, PollEvery: 100 * time.Millisecond,
			Swap: hotswap.Options{Settle: 50 * time.Millisecond, HealthTimeout: 2 * time.Second}}
	}
	// The node file: a kubelet build over every Windows Node, no
	// credentials, the default transport.
	specOf := func(version string, maxUnavailable int32, checks ...v1alpha1.HealthCheck) *v1alpha1.Node {
		t.Helper()
		src := filepath.Join(dir, "kubelet-"+version+".exe")
		if err := os.WriteFile(src, simnode.KubeletBinary(version), 0o644); err != nil {
			t.Fatal(err)
		}
		mu := intstr.FromInt32(maxUnavailable)
		spec := &v1alpha1.Node{ObjectMeta: metav1.ObjectMeta{Name: "workers"}, Spec: v1alpha1.NodeSpec{Kubernetes: v1alpha1.KubernetesSpec{
			Provisioners: []v1alpha1.ProvisionerSpec{{Name: "kubelet", Version: version, SourceURL: src, Destination: clustertest.KubeletPath, HealthChecks: checks}},
			Rollout:      &v1alpha1.RolloutSpec{MaxUnavailable: &mu, Timeout: &metav1.Duration{Duration: 30 * time.Second}},
		}}}
		v1alpha1.SetDefaults_Node(spec)
		if errs := v1alpha1.ValidateNode(spec); len(errs) > 0 || spec.Spec.Kubernetes.Rollout.Transport != v1alpha1.TransportKubernetes {
			t.Fatalf("the node file: %v (transport %s)", errs.ToAggregate(), spec.Spec.Kubernetes.Rollout.Transport)
		}
		return spec
	}
	versions := func() []string {
		t.Helper()
		var out []string
		for _, name := range names {
			n, err := cl.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, n.Status.NodeInfo.KubeletVersion)
		}
		return out
	}
	noSSH := func() {
		t.Helper()
		for _, name := range names {
			if got := nodes[name].Connections(); got != 0 {
				t.Errorf("Node %s saw %d SSH connections, want none", name, got)
			}
		}
	}

	t.Run("maxUnavailable 2", func(t *testing.T) {
		obs := &concurrency{}
		rep, err := rollout.Run(ctx, specOf("v1.37.3", 2), options(obs))
		if err != nil || !equal(results(rep), repeat(rollout.ResultChanged, 5)) {
			t.Fatalf("rollout = %+v, %v", rep, err)
		}
		if got := versions(); !equal(got, repeat("v1.37.3", 5)) {
			t.Errorf("Nodes report %v, want v1.37.3", got)
		}
		if obs.most < 1 || obs.most > 2 {
			t.Errorf("%d Nodes swapped at once, want 1 to 2", obs.most)
		}
		for _, name := range names {
			if b, err := nodes[name].Node().ReadFile(clustertest.KubeletPath); err != nil || string(b) != string(simnode.KubeletBinary("v1.37.3")) {
				t.Errorf("Node %s's kubelet.exe: %v, want the v1.37.3 build", name, err)
			}
			p, err := cl.Client.CoreV1().Pods(rollout.Namespace).Get(ctx, kubeconn.PodName(name), metav1.GetOptions{})
			if err != nil || p.Spec.NodeName != name {
				t.Errorf("the agent pod of Node %s: %v", name, err)
			}
		}
		ns, err := cl.Client.CoreV1().Namespaces().Get(ctx, rollout.Namespace, metav1.GetOptions{})
		if err != nil || ns.Labels[kubeconn.LabelEnforce] != "privileged" {
			t.Errorf("namespace %s: %v, %v; want it labelled for privileged pods", rollout.Namespace, ns.Labels, err)
		}
		noSSH()
	})

	t.Run("an interrupted rollout resumes", func(t *testing.T) {
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		obs := &concurrency{onSwap: func(node string) {
			if node == names[1] {
				stop()
			}
		}}
		rep, err := rollout.Run(rctx, specOf("v1.37.5", 1), options(obs))
		if err == nil || rep == nil || rep.Nodes[0].Result != rollout.ResultChanged || rep.Nodes[1].Result != rollout.ResultInterrupted ||
			!equal(results(rep)[2:], repeat(rollout.ResultUntouched, 3)) {
			t.Fatalf("interrupted rollout = %+v, %v", rep, err)
		}
		rep, err = rollout.Run(ctx, specOf("v1.37.5", 1), options(nil))
		if err != nil || !rep.Resumed || !equal(results(rep), append([]string{rollout.ResultDoneBefore}, repeat(rollout.ResultChanged, 4)...)) {
			t.Fatalf("resumed rollout = %+v, %v", rep, err)
		}
		if got := versions(); !equal(got, repeat("v1.37.5", 5)) {
			t.Errorf("Nodes report %v after the resumed rollout", got)
		}
		noSSH()
	})

	t.Run("a build failing on the third Node is rolled back there and the rollout stops", func(t *testing.T) {
		for i, name := range names {
			if i != 2 {
				if err := nodes[name].Node().WriteFile(`C:\k\ready`, []byte("ok")); err != nil {
					t.Fatal(err)
				}
			}
		}
		check := v1alpha1.HealthCheck{Command: []string{"cmd.exe", "/c", "type", `C:\k\ready`}}
		// Drained first: swdt's own agent pods, there from the runs
		// before, stay.
		spec := specOf("v1.37.6", 1, check)
		spec.Spec.Kubernetes.Rollout.Drain = &v1alpha1.DrainSpec{}
		rep, err := rollout.Run(ctx, spec, options(nil))
		want := []string{rollout.ResultChanged, rollout.ResultChanged, rollout.ResultRolledBack, rollout.ResultUntouched, rollout.ResultUntouched}
		if !errors.Is(err, rollout.ErrStopped) || !equal(results(rep), want) || !strings.Contains(rep.Stopped, names[2]) {
			t.Fatalf("rollout = %+v, %v; want %v", rep, err, want)
		}
		if got, want := versions(), []string{"v1.37.6", "v1.37.6", "v1.37.5", "v1.37.5", "v1.37.5"}; !equal(got, want) {
			t.Errorf("Nodes report %v, want %v", got, want)
		}
		if b, _ := nodes[names[2]].Node().ReadFile(clustertest.KubeletPath); string(b) != string(simnode.KubeletBinary("v1.37.5")) {
			t.Errorf("the third Node's kubelet.exe holds %q, want the build it had", b)
		}
		for _, n := range rep.Nodes {
			if n.Evicted != 0 {
				t.Errorf("the drain of Node %s evicted %d pods, want swdt's own agent pod kept", n.Name, n.Evicted)
			}
			if nd, err := cl.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{}); err != nil || nd.Spec.Unschedulable {
				t.Errorf("Node %s is left cordoned (%s): %v", n.Name, n.Result, err)
			}
		}
		noSSH()
	})

	t.Run("reset removes the state, then swdt's namespace once no other rollout's state is kept there", func(t *testing.T) {
		cms := cl.Client.CoreV1().ConfigMaps(rollout.Namespace)
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: rollout.ConfigMapName("canary"), Labels: map[string]string{rollout.LabelRollout: "canary"}}}
		if _, err := cms.Create(ctx, other, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, err := rollout.Reset(ctx, specOf("v1.37.6", 1), options(nil), kopts)
		if err != nil || !rep.State || rep.Namespace || !equal(rep.Kept, []string{"canary"}) || !equal(rep.Pods, names) {
			t.Fatalf("Reset beside another rollout's state = %+v, %v", rep, err)
		}
		if _, err := cms.Get(ctx, rollout.ConfigMapName("workers"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the rollout's state after the reset: %v, want it deleted", err)
		}
		for _, name := range names {
			if p, err := cl.Client.CoreV1().Pods(rollout.Namespace).Get(ctx, kubeconn.PodName(name), metav1.GetOptions{}); err == nil && p.DeletionTimestamp == nil {
				t.Errorf("the agent pod of Node %s after the reset: not being deleted", name)
			}
		}
		if err := cms.Delete(ctx, other.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, err = rollout.Reset(ctx, specOf("v1.37.6", 1), options(nil), kopts)
		if err != nil || rep.State || !rep.Namespace || len(rep.Kept) != 0 {
			t.Fatalf("Reset = %+v, %v", rep, err)
		}
		ns, err := cl.Client.CoreV1().Namespaces().Get(ctx, rollout.Namespace, metav1.GetOptions{})
		if err == nil && ns.DeletionTimestamp == nil {
			t.Errorf("namespace %s after the reset: not being deleted", rollout.Namespace)
		} else if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	})
}
