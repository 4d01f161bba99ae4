package rollout_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/clustertest"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/daytwo"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/join"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/rollout"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/source"
)

// fleetFixture is a real control plane and simnodes joined to it as
// Windows Nodes with simulated kubelets (running v1.37.2), each reached
// over SSH by its Node name.
type fleetFixture struct {
	t     *testing.T
	cl    *clustertest.Cluster
	dir   string
	names []string
	nodes map[string]*simnode.TestServer
	specs map[string]v1alpha1.Node
}

const pool = "example.com/pool"

func newFleet(t *testing.T, count int) *fleetFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a control plane and joins simnodes to it")
	}
	fx := &fleetFixture{t: t, cl: clustertest.Start(t), dir: t.TempDir(), nodes: map[string]*simnode.TestServer{}, specs: map[string]v1alpha1.Node{}}
	if err := os.WriteFile(filepath.Join(fx.dir, "kubelet.exe"), simnode.KubeletBinary("v1.37.2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fx.dir, "containerd.exe"), []byte("MZ containerd stand-in\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var specs []v1alpha1.Node
	for i := 1; i <= count; i++ {
		host := fmt.Sprintf("WIN-ROLL%02d", i)
		name := strings.ToLower(host)
		ts := simnode.StartTest(t, simnode.WithOptions(func(o *simnode.Options) { o.Bare = true; o.Hostname = host }))
		spec := v1alpha1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.NodeSpec{
			Credentials: ts.Credentials(),
			Kubernetes: v1alpha1.KubernetesSpec{
				Provisioners: []v1alpha1.ProvisionerSpec{
					{Name: "containerd", SourceURL: filepath.Join(fx.dir, "containerd.exe"), Destination: `C:\Program Files\containerd\containerd.exe`},
					{Name: "kubelet", Version: "v1.37.2", SourceURL: filepath.Join(fx.dir, "kubelet.exe"), Destination: `C:\k\kubelet.exe`},
				},
				Join: &v1alpha1.JoinSpec{Kubeconfig: fx.cl.Kubeconfig, Labels: map[string]string{pool: "roll"}},
			},
		}}
		v1alpha1.SetDefaults_Node(&spec)
		fx.names = append(fx.names, name)
		fx.nodes[name], fx.specs[name] = ts, spec
		specs = append(specs, spec)
	}
	connect := func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (*node.Node, error) {
		return node.Connect(ctx, *spec, node.ConnectOptions{})
	}
	obs := nopJoinObserver{}
	results, err := join.Run(t.Context(), specs, func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (join.Node, func(), error) {
		n, err := connect(ctx, spec, warn)
		if err != nil {
			return nil, nil, err
		}
		return n, func() { n.Close() }, nil
	}, join.Options{Resolver: &source.Resolver{CacheDir: filepath.Join(fx.dir, "cache")}, Observer: obs,
		Reboot: func(ctx context.Context, spec *v1alpha1.Node) error {
			_, err := daytwo.Reboot(ctx, spec, connect, daytwo.RebootOptions{Wait: true, Timeout: 2 * time.Minute, Step: func(string) {}, Warn: func(string) {}})
			return err
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("join %s: %v", r.Node, r.Err)
		}
	}
	for _, name := range fx.names {
		fx.cl.WaitKubeletVersion(t, name, "v1.37.2")
	}
	return fx
}

type nopJoinObserver struct{}

func (nopJoinObserver) Step(string, string) {}
func (nopJoinObserver) Warn(string)         {}

// connector reaches a Node by its name: the simnode joined as it.
func (fx *fleetFixture) connector() rollout.Connector {
	return rollout.ConnectFunc(func(ctx context.Context, name string, _ func(string)) (*node.Node, error) {
		spec, ok := fx.specs[name]
		if !ok {
			return nil, fmt.Errorf("no simnode is Node %s", name)
		}
		return node.Connect(ctx, spec, node.ConnectOptions{})
	})
}

// rolloutOf is the rollout file's Node: a kubelet build reporting
// version, over the pool's Nodes.
func (fx *fleetFixture) rolloutOf(version string, maxUnavailable int32, checks ...v1alpha1.HealthCheck) *v1alpha1.Node {
	fx.t.Helper()
	src := filepath.Join(fx.dir, "kubelet-"+version+".exe")
	if err := os.WriteFile(src, simnode.KubeletBinary(version), 0o644); err != nil {
		fx.t.Fatal(err)
	}
	mu := intstr.FromInt32(maxUnavailable)
	return &v1alpha1.Node{ObjectMeta: metav1.ObjectMeta{Name: "workers"}, Spec: v1alpha1.NodeSpec{Kubernetes: v1alpha1.KubernetesSpec{
		Provisioners: []v1alpha1.ProvisionerSpec{{Name: "kubelet", Version: version, SourceURL: src, Destination: `C:\k\kubelet.exe`, HealthChecks: checks}},
		Rollout: &v1alpha1.RolloutSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{pool: "roll"}}, MaxUnavailable: &mu,
			Timeout: &metav1.Duration{Duration: 30 * time.Second}},
	}}}
}

// options are a rollout's options as user (kubeconfig path).
func (fx *fleetFixture) options(kubeconfig string, obs rollout.Observer) rollout.Options {
	fx.t.Helper()
	c, err := cluster.Connect(kubeconfig, "")
	if err != nil {
		fx.t.Fatal(err)
	}
	return rollout.Options{Cluster: c, Connect: fx.connector(), Resolver: &source.Resolver{CacheDir: filepath.Join(fx.dir, "cache")},
		Swap: hotswap.Options{Settle: 50 * time.Millisecond, HealthTimeout: 2 * time.Second}, Observer: obs, PollEvery: 100 * time.Millisecond}
}

// versions is what each Node reports, in name order.
func (fx *fleetFixture) versions() []string {
	fx.t.Helper()
	var out []string
	for _, name := range fx.names {
		n, err := fx.cl.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			fx.t.Fatal(err)
		}
		out = append(out, n.Status.NodeInfo.KubeletVersion)
	}
	return out
}

// results are the report's results, in name order.
func results(rep *rollout.Report) []string {
	var out []string
	for _, n := range rep.Nodes {
		out = append(out, n.Result)
	}
	return out
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// state reads the rollout's state from the cluster; nil when none.
func (fx *fleetFixture) state(name string) *corev1.ConfigMap {
	fx.t.Helper()
	cm, err := fx.cl.Client.CoreV1().ConfigMaps(rollout.Namespace).Get(context.Background(), rollout.ConfigMapName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		fx.t.Fatal(err)
	}
	return cm
}

// concurrency records how many Nodes swap at once.
type concurrency struct {
	mu        sync.Mutex
	now, most int
	// onSwap, when set, is called as a Node's swap starts.
	onSwap func(node string)
}

func (c *concurrency) Step(node, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(msg, "swapping "):
		c.now++
		c.most = max(c.most, c.now)
		if c.onSwap != nil {
			c.onSwap(node)
		}
	case strings.HasPrefix(msg, "waiting for Node"):
		c.now--
	}
}

func (c *concurrency) Warn(string) {}

// TestRollout rolls kubelet builds over five joined Windows Nodes: a user
// without the rights is refused before anything changes; --dry-run
// changes nothing; maxUnavailable 1 and 2 take every Node to the new
// build, never more than that many at once; an interrupted rollout
// resumes from its state in the cluster; a build that fails its health
// check on the third Node is rolled back there, the Node uncordoned, and
// the rollout stops, two Nodes on the new build and the rest untouched;
// a build the cluster does not confirm (another kubeletVersion) is undone
// on the first Node.
func TestRollout(t *testing.T) {
	fx := newFleet(t, 5)
	ctx := t.Context()

	t.Run("a user without the rights is refused before anything changes", func(t *testing.T) {
		raw, err := fx.cl.NodeKubeconfig(fx.names[0])
		if err != nil {
			t.Fatal(err)
		}
		kc := filepath.Join(fx.dir, "node.kubeconfig")
		if err := os.WriteFile(kc, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := rollout.Run(ctx, fx.rolloutOf("v1.37.1", 1), fx.options(kc, nil))
		if err == nil || rep != nil || !strings.Contains(err.Error(), "may not") || !strings.Contains(err.Error(), "configmaps in namespace "+rollout.Namespace) ||
			!strings.Contains(err.Error(), "nothing was changed") {
			t.Fatalf("Run as a Node's user = %+v, %v; want a refusal naming the missing rights", rep, err)
		}
		if got := fx.versions(); !equal(got, repeat("v1.37.2", 5)) || fx.state("workers") != nil {
			t.Errorf("after the refusal: versions %v, state %v", got, fx.state("workers"))
		}
	})

	t.Run("dry run", func(t *testing.T) {
		opts := fx.options(fx.cl.Kubeconfig, nil)
		opts.DryRun = true
		rep, err := rollout.Run(ctx, fx.rolloutOf("v1.37.1", 1), opts)
		if err != nil || !equal(results(rep), repeat(rollout.ResultWouldChange, 5)) || rep.Selector != pool+"=roll,kubernetes.io/os=windows" {
			t.Fatalf("dry run = %+v, %v", rep, err)
		}
		if got := fx.versions(); !equal(got, repeat("v1.37.2", 5)) || fx.state("workers") != nil {
			t.Errorf("after the dry run: versions %v, state %v", got, fx.state("workers"))
		}
	})

	for _, tc := range []struct {
		version        string
		maxUnavailable int32
	}{{"v1.37.1", 1}, {"v1.37.3", 2}} {
		t.Run(fmt.Sprintf("maxUnavailable %d", tc.maxUnavailable), func(t *testing.T) {
			obs := &concurrency{}
			rep, err := rollout.Run(ctx, fx.rolloutOf(tc.version, tc.maxUnavailable), fx.options(fx.cl.Kubeconfig, obs))
			if err != nil || !equal(results(rep), repeat(rollout.ResultChanged, 5)) || rep.Resumed || rep.Stopped != "" {
				t.Fatalf("rollout = %+v, %v", rep, err)
			}
			if got := fx.versions(); !equal(got, repeat(tc.version, 5)) {
				t.Errorf("Nodes report %v, want %s", got, tc.version)
			}
			for _, n := range rep.Nodes {
				if n.Kubelet != tc.version {
					t.Errorf("report: Node %s runs %q, want %s", n.Name, n.Kubelet, tc.version)
				}
			}
			if obs.most < 1 || obs.most > int(tc.maxUnavailable) {
				t.Errorf("%d Nodes swapped at once, want 1 to %d", obs.most, tc.maxUnavailable)
			}
		})
	}

	t.Run("an interrupted rollout resumes from the cluster", func(t *testing.T) {
		rctx, cancel := context.WithCancel(ctx)
		defer cancel()
		obs := &concurrency{onSwap: func(node string) {
			if node == fx.names[1] {
				cancel()
			}
		}}
		rep, err := rollout.Run(rctx, fx.rolloutOf("v1.37.5", 1), fx.options(fx.cl.Kubeconfig, obs))
		if err == nil || rep == nil || rep.Nodes[0].Result != rollout.ResultChanged || rep.Nodes[1].Result != rollout.ResultInterrupted ||
			!equal(results(rep)[2:], repeat(rollout.ResultUntouched, 3)) || !strings.Contains(rep.Stopped, "run swdt rollout again to resume") {
			t.Fatalf("interrupted rollout = %+v, %v", rep, err)
		}
		if cm := fx.state("workers"); cm == nil || !strings.Contains(cm.Data[rollout.StateKey], `"`+fx.names[0]+`":{"phase":"done"`) {
			t.Fatalf("state after the interruption: %+v", cm)
		}
		rep, err = rollout.Run(ctx, fx.rolloutOf("v1.37.5", 1), fx.options(fx.cl.Kubeconfig, nil))
		if err != nil || !rep.Resumed || !equal(results(rep), append([]string{rollout.ResultDoneBefore}, repeat(rollout.ResultChanged, 4)...)) {
			t.Fatalf("resumed rollout = %+v, %v", rep, err)
		}
		if got := fx.versions(); !equal(got, repeat("v1.37.5", 5)) {
			t.Errorf("Nodes report %v after the resumed rollout", got)
		}
	})

	t.Run("a build failing on the third Node is rolled back there and the rollout stops", func(t *testing.T) {
		// The build's readiness check: a file every Node has but the
		// third.
		for i, name := range fx.names {
			if i != 2 {
				if err := fx.nodes[name].Node().WriteFile(`C:\k\ready`, []byte("ok")); err != nil {
					t.Fatal(err)
				}
			}
		}
		check := v1alpha1.HealthCheck{Command: []string{"cmd.exe", "/c", "type", `C:\k\ready`}}
		spec := fx.rolloutOf("v1.37.6", 1, check)
		spec.Spec.Kubernetes.Rollout.Drain = &v1alpha1.DrainSpec{}
		rep, err := rollout.Run(ctx, spec, fx.options(fx.cl.Kubeconfig, nil))
		want := []string{rollout.ResultChanged, rollout.ResultChanged, rollout.ResultRolledBack, rollout.ResultUntouched, rollout.ResultUntouched}
		if !errors.Is(err, rollout.ErrStopped) || !equal(results(rep), want) || !strings.Contains(rep.Stopped, fx.names[2]) {
			t.Fatalf("rollout = %+v, %v; want %v", rep, err, want)
		}
		if got, want := fx.versions(), []string{"v1.37.6", "v1.37.6", "v1.37.5", "v1.37.5", "v1.37.5"}; !equal(got, want) {
			t.Errorf("Nodes report %v, want %v", got, want)
		}
		third := fx.nodes[fx.names[2]].Node()
		if b, _ := third.ReadFile(`C:\k\kubelet.exe`); string(b) != string(simnode.KubeletBinary("v1.37.5")) {
			t.Errorf("the third Node's kubelet.exe holds %q, want the build it had", b)
		}
		if svc := fx.nodes[fx.names[2]].State().Services["kubelet"]; svc == nil || svc.Status != simnode.StatusRunning {
			t.Errorf("the third Node's kubelet after the rollback: %+v", svc)
		}
		for _, n := range rep.Nodes {
			if n.Kubelet == "" {
				t.Errorf("the report does not say what Node %s runs: %+v", n.Name, n)
			}
			if fx.node(n.Name).Spec.Unschedulable {
				t.Errorf("Node %s is left cordoned (%s)", n.Name, n.Result)
			}
		}
	})

	t.Run("a build the cluster does not confirm is undone on the first Node", func(t *testing.T) {
		before := fx.versions()
		spec := fx.rolloutOf("v1.37.7", 1)
		// The build reports another version than the provisioner says.
		if err := os.WriteFile(spec.Spec.Kubernetes.Provisioners[0].SourceURL, simnode.KubeletBinary("v1.36.9"), 0o644); err != nil {
			t.Fatal(err)
		}
		spec.Spec.Kubernetes.Rollout.Timeout = &metav1.Duration{Duration: 5 * time.Second}
		rep, err := rollout.Run(ctx, spec, fx.options(fx.cl.Kubeconfig, nil))
		want := append([]string{rollout.ResultRolledBack}, repeat(rollout.ResultUntouched, 4)...)
		if !errors.Is(err, rollout.ErrStopped) || !equal(results(rep), want) ||
			!strings.Contains(rep.Nodes[0].Error, "the cluster did not confirm the swap within 5s") || !strings.Contains(rep.Nodes[0].Error, "not v1.37.7") {
			t.Fatalf("rollout = %+v, %v; want %v", rep, err, want)
		}
		if p := rep.Nodes[0].Provisioners; len(p) != 1 || p[0].Action != hotswap.ActionRolledBack {
			t.Errorf("the first Node's kubelet: %+v, want rolled-back", p)
		}
		if got := fx.versions(); !equal(got, before) || rep.Nodes[0].Kubelet != before[0] {
			t.Errorf("Nodes report %v (report: %s), want %v as before", got, rep.Nodes[0].Kubelet, before)
		}
	})
}

// TestRolloutDrain: a Node is cordoned and its pods evicted before its
// swap; a PodDisruptionBudget that allows no eviction holds the drain
// until its timeout, which stops the rollout with the Node uncordoned and
// unchanged; once the budget allows it the pod is evicted, and the Node
// is uncordoned after its swap.
func TestRolloutDrain(t *testing.T) {
	fx := newFleet(t, 1)
	ctx := t.Context()
	name := fx.names[0]
	pods := fx.cl.Client.CoreV1().Pods(metav1.NamespaceDefault)
	// The test control plane has no token controller to make it.
	if _, err := fx.cl.Client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "web", Image: "mcr.microsoft.com/windows/nanoserver:ltsc2022"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A budget counts Running, Ready pods (a Pending one is evicted
	// whatever it says); no kubelet runs this one, so its status says so.
	web, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	web.Status.Phase = corev1.PodRunning
	web.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := pods.UpdateStatus(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdbs := fx.cl.Client.PolicyV1().PodDisruptionBudgets(metav1.NamespaceDefault)
	zero := intstr.FromInt32(0)
	if _, err := pdbs.Create(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grace := int64(0)
	spec := fx.rolloutOf("v1.37.1", 1)
	spec.Spec.Kubernetes.Rollout.Drain = &v1alpha1.DrainSpec{Timeout: &metav1.Duration{Duration: 3 * time.Second}, GracePeriodSeconds: &grace}

	rep, err := rollout.Run(ctx, spec, fx.options(fx.cl.Kubeconfig, nil))
	if !errors.Is(err, rollout.ErrStopped) || rep.Nodes[0].Result != rollout.ResultFailed || !strings.Contains(rep.Nodes[0].Error, "default/web was not evicted within 3s") {
		t.Fatalf("drain held by the budget: %+v, %v", rep, err)
	}
	if n := fx.node(name); n.Spec.Unschedulable || n.Status.NodeInfo.KubeletVersion != "v1.37.2" {
		t.Errorf("after the failed drain: unschedulable %t, kubelet %s; want it back in service, unchanged", n.Spec.Unschedulable, n.Status.NodeInfo.KubeletVersion)
	}

	if err := pdbs.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rep, err = rollout.Run(ctx, spec, fx.options(fx.cl.Kubeconfig, nil))
	if err != nil || rep.Nodes[0].Result != rollout.ResultChanged || rep.Nodes[0].Evicted != 1 {
		t.Fatalf("drain: %+v, %v", rep, err)
	}
	if _, err := pods.Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod is still there after the drain: %v", err)
	}
	if n := fx.node(name); n.Spec.Unschedulable || n.Status.NodeInfo.KubeletVersion != "v1.37.1" {
		t.Errorf("after the rollout: unschedulable %t, kubelet %s", n.Spec.Unschedulable, n.Status.NodeInfo.KubeletVersion)
	}
}

func (fx *fleetFixture) node(name string) *corev1.Node {
	fx.t.Helper()
	n, err := fx.cl.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		fx.t.Fatal(err)
	}
	return n
}

func equal(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}
