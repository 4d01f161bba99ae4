// Package join is the `swdt join` workflow: it makes a Windows node a
// worker of the developer's own cluster, and `--reset` undoes it.
//
// A join checks the control plane first (reachable, credentials that may
// create bootstrap tokens, the kubelet version allowed by the skew policy)
// and the node (not joined to another cluster, its name not taken by
// another machine) before it changes anything. Then it creates a bootstrap
// token as `kubeadm token create` does, writes the files a kubeadm join
// writes on Windows (the cluster CA, the bootstrap kubeconfig and a
// KubeletConfiguration) through the agent, installs the kubelet through
// the hot-swap and registers its service with --windows-service, waits for
// the Node to register and renew its Lease, and deletes the token: the
// kubelet has its own client certificate by then (TLS bootstrap).
//
// It reaches the node through Node and the cluster through pkg/cluster;
// it never prints and never sees SSH.
package join

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/internal/words"
	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/fleet"
	"sigs.k8s.io/swdt/pkg/hotswap"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/source"
	"sigs.k8s.io/swdt/pkg/target"
)

// Node is what the workflow needs from a node; *node.Node implements it.
type Node interface {
	hotswap.Node
	InspectJoin(ctx context.Context, req ops.JoinInspectRequest) (ops.JoinInspectResponse, error)
	WriteJoinFiles(ctx context.Context, req ops.JoinWriteRequest) (ops.JoinWriteResponse, error)
	ResetJoin(ctx context.Context, req ops.JoinResetRequest) (ops.JoinResetResponse, error)
	RegisterService(ctx context.Context, req ops.ServiceRegisterRequest) (ops.ServiceRegisterResponse, error)
	JoinFeature(ctx context.Context, req ops.JoinFeatureRequest) (ops.JoinFeatureResponse, error)
	JoinSetup(ctx context.Context, req ops.JoinSetupRequest) (ops.JoinSetupResponse, error)
	ProbeAPIServer(ctx context.Context, req ops.APIServerProbeRequest) (ops.APIServerProbeResponse, error)
}

// Observer shows a run. Implementations must be safe for concurrent use.
type Observer interface {
	// Step reports what one node is doing.
	Step(node, msg string)
	// Warn reports something the user must see.
	Warn(msg string)
}

// Options tune a run.
type Options struct {
	// Reset undoes a join instead.
	Reset bool
	// Resolver resolves the sources of the join's binaries.
	Resolver *source.Resolver
	// Swap tunes the kubelet's hot-swap; Observer and Command are set here.
	Swap hotswap.Options
	// Observer shows the run.
	Observer Observer
	// PollEvery is how often the Node is read while waiting (default 1s).
	PollEvery time.Duration
	// TokenTTL is how long the bootstrap token is valid (default 1h; it is
	// deleted once the node has joined).
	TokenTTL time.Duration
	// Reboot restarts a node and waits for it and its services, as swdt
	// reboot --wait does: a join needs it once the Containers feature is
	// installed (node_setup.go).
	Reboot func(ctx context.Context, spec *v1alpha1.Node) error
}

// Result words of a report.
const (
	ResultChanged   = "changed"
	ResultUnchanged = "unchanged"
	ResultFailed    = "failed"
	ResultRemoved   = "removed"
)

// DefaultTimeout bounds the wait for the Node when the node file sets none.
const DefaultTimeout = 3 * time.Minute

// Report is the outcome on one node.
type Report struct {
	// NodeName is the Node object's name.
	NodeName string `json:"nodeName"`
	// Result is changed, unchanged or failed (removed for --reset).
	Result string `json:"result"`
	// Server is the API server the node joined (or left).
	Server string `json:"server"`
	// Endpoint is the API server's address as the node uses it.
	Endpoint *cluster.NodeEndpoint `json:"apiServerEndpoint,omitempty"`
	// Binaries are the hot-swap results of containerd (when installed)
	// and the kubelet.
	Binaries []hotswap.Result `json:"binaries,omitempty"`
	// FilesChanged lists the join files written.
	FilesChanged []ops.JoinFile `json:"filesChanged,omitempty"`
	// Containers is the Windows Containers feature's state after the
	// join ("" when the node cannot tell); Rebooted is true when the join
	// installed it and rebooted the node.
	Containers string `json:"containers,omitempty"`
	Rebooted   bool   `json:"rebooted,omitempty"`
	// FirewallRules lists the firewall rules the join created or
	// enabled; ServicesConfigured the services it gave restart actions
	// and ErrorControl Normal.
	FirewallRules      []string `json:"firewallRules,omitempty"`
	ServicesConfigured []string `json:"servicesConfigured,omitempty"`
	// Node is what the cluster says of the Node afterwards.
	Node cluster.NodeState `json:"node"`
	// Note explains a Node that is not Ready.
	Note string `json:"note,omitempty"`
	// Removed lists what --reset removed from the node and the cluster.
	Removed []string `json:"removed,omitempty"`
	// Ended lists the processes --reset ended because they ran a binary
	// it removes (pod sandboxes' shims); InUse those it could not end,
	// whose files it kept.
	Ended []ops.JoinProcess `json:"ended,omitempty"`
	InUse []ops.JoinProcess `json:"inUse,omitempty"`
	// LeftInCluster lists what --reset could not delete in the cluster
	// (gone, unreachable, refusing, or not the one the node joined), and
	// why; the node side is reset all the same.
	LeftInCluster []Leftover `json:"leftInCluster,omitempty"`
	// Error says what failed.
	Error string `json:"error,omitempty"`
}

// Connect opens one node; fleet.Connector's shape with the join Node.
type Connect func(ctx context.Context, spec *v1alpha1.Node, warn func(string)) (Node, func(), error)

// Run joins (or resets) every node in parallel. Its error is a usage
// error when no node has spec.kubernetes.join.
func Run(ctx context.Context, nodes []v1alpha1.Node, connect Connect, opts Options) ([]fleet.Result[*Report], error) {
	with, skipped := withJoin(nodes)
	for _, name := range skipped {
		opts.Observer.Warn("node " + name + " has no spec.kubernetes.join: skipped")
	}
	if len(with) == 0 {
		return nil, exitcode.WithCode(exitcode.Usage, errors.New("no node has spec.kubernetes.join: add one naming the cluster's kubeconfig (see docs/join.md)"))
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = time.Second
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	return fleet.Run(ctx, with, 0, func(ctx context.Context, spec *v1alpha1.Node) (*Report, error) {
		j := &joiner{spec: spec, opts: opts, step: func(msg string) { opts.Observer.Step(spec.Name, msg) }}
		if opts.Reset {
			return j.reset(ctx, connect)
		}
		return j.join(ctx, connect)
	}), nil
}

// withJoin splits nodes into those with spec.kubernetes.join and the
// names of the others, which a join skips.
func withJoin(nodes []v1alpha1.Node) (with []v1alpha1.Node, skipped []string) {
	for _, n := range nodes {
		if n.Spec.Kubernetes.Join == nil {
			skipped = append(skipped, n.Name)
			continue
		}
		with = append(with, n)
	}
	return with, skipped
}

// Failures lists what failed on one node.
func Failures(r *Report) []error {
	if r != nil && r.Error != "" {
		return []error{fmt.Errorf("%s", r.Error)}
	}
	return nil
}

type joiner struct {
	spec *v1alpha1.Node
	opts Options
	step func(string)
}

// prepared is what a join checked before it changes anything.
type prepared struct {
	cluster    *cluster.Cluster
	kubelet    *v1alpha1.ProvisionerSpec
	containerd *v1alpha1.ProvisionerSpec // nil: the node has its runtime
	kubeProxy  *v1alpha1.ProvisionerSpec // nil: no kube-proxy service (a CNI's DaemonSet runs it)
	logRunner  *v1alpha1.ProvisionerSpec // nil: the kubelet and kube-proxy run without kube-log-runner
	// helpers are the other binaries of the containerd service (its
	// shim, ctr.exe); files feed no service (the CNI plugins).
	helpers, files []*v1alpha1.ProvisionerSpec
	version        string // the kubelet version the node must report ("" unknown)
	serverVersion  string // the release of the control plane, for release:kubernetes without a version
	sources        map[*v1alpha1.ProvisionerSpec]*source.File
	registered     []string // the join's services the node has
	n              Node
	closeN         func()
	name           string
	joined         bool // the node's kubelet.conf names this cluster
	endpoint       cluster.NodeEndpoint
	before         cluster.NodeState
}

// newPrepared sorts the provisioners of k into what a join installs:
// the kubelet, containerd and kube-proxy (when a provisioner feeds them),
// containerd's helpers and the files of no service.
func newPrepared(k *v1alpha1.KubernetesSpec) *prepared {
	p := &prepared{kubelet: v1alpha1.JoinKubelet(k), containerd: v1alpha1.JoinContainerd(k), kubeProxy: v1alpha1.JoinKubeProxy(k),
		logRunner: v1alpha1.JoinLogRunner(k), sources: map[*v1alpha1.ProvisionerSpec]*source.File{}}
	p.helpers, p.files = extras(k, p.containerd)
	return p
}

func (j *joiner) prepare(ctx context.Context, connect Connect) (*prepared, error) {
	js := j.spec.Spec.Kubernetes.Join
	p := newPrepared(&j.spec.Spec.Kubernetes)
	c, err := cluster.Connect(js.Kubeconfig, js.Context)
	if err != nil {
		return nil, err
	}
	p.cluster = c
	j.step("checking the control plane at " + c.Server)
	server, err := c.Check(ctx)
	if err != nil {
		return nil, err
	}
	p.serverVersion = releaseOf(server)
	if p.endpoint, err = c.ResolveNodeEndpoint(ctx, js.APIServerEndpoint); err != nil {
		return nil, err
	}
	if p.version, err = kubeletVersion(p.kubelet, server); err != nil {
		return nil, err
	}
	for _, pr := range p.binaries() {
		b := target.Provisioner(*pr).Source()
		if isKubernetesRelease(pr) && b.Version == "" {
			b.Version = p.serverVersion
		}
		f, err := j.opts.Resolver.ResolveBinary(ctx, b, nil)
		if err != nil {
			return nil, fmt.Errorf("provisioner %s: %w; nothing was changed", pr.Name, err)
		}
		p.sources[pr] = f
	}
	j.step("connecting to " + j.spec.Spec.Credentials.Hostname)
	n, closeN, err := connect(ctx, j.spec, func(msg string) { j.opts.Observer.Warn("node " + j.spec.Name + ": " + msg) })
	if err != nil {
		return nil, err
	}
	p.n, p.closeN = n, closeN
	ins, err := n.InspectJoin(ctx, ops.JoinInspectRequest{Containerd: p.containerd != nil, CNI: p.installsCNI()})
	if err != nil {
		closeN()
		return nil, err
	}
	if len(ins.Unsafe) > 0 {
		closeN()
		return nil, fmt.Errorf("the node's folders for the kubelet's credentials are not safe: %s; nothing was changed (docs/security.md)", strings.Join(ins.Unsafe, "; "))
	}
	if err := j.probeEndpoint(ctx, n, p.endpoint, c.CAData); err != nil {
		closeN()
		return nil, err
	}
	for _, msg := range ins.Ignored {
		j.opts.Observer.Warn("node " + j.spec.Name + ": " + msg)
	}
	p.registered = ins.Services
	p.name = nodeName(js, ins.Hostname)
	if p.joined, err = joinedTo(ins.Kubeconfig, []string{p.endpoint.Server, c.Server}); err != nil {
		closeN()
		return nil, err
	}
	if p.before, err = c.Node(ctx, p.name); err != nil {
		closeN()
		return nil, err
	}
	if p.before.Registered && !p.joined {
		closeN()
		return nil, fmt.Errorf("the cluster already has a Node named %s, and this machine has no kubelet credentials for it: another machine has that name. Set spec.kubernetes.join.nodeName, or delete the stale Node (kubectl delete node %s); nothing was changed", p.name, p.name)
	}
	return p, nil
}

// kubeletVersion is the version the kubelet must report to a control
// plane of version server: the kubelet provisioner's version, else the
// control plane's release for release:kubernetes ("" when unknown: any
// version will do); either must be within the skew policy.
func kubeletVersion(kubelet *v1alpha1.ProvisionerSpec, server *version.Version) (string, error) {
	want, out := server, ""
	if isKubernetesRelease(kubelet) && kubelet.Version == "" {
		out = releaseOf(server)
	}
	if v := kubelet.Version; v != "" {
		var err error
		if want, err = version.ParseGeneric(v); err != nil {
			return "", fmt.Errorf("provisioner %s: version %q is not a Kubernetes version such as v1.37.2: %w", kubelet.Name, v, err)
		}
		out = "v" + strings.TrimPrefix(v, "v")
	}
	if err := cluster.CheckSkew(want, server); err != nil {
		return "", fmt.Errorf("provisioner %s: %w", kubelet.Name, err)
	}
	return out, nil
}

// nodeName is the name of the node's Node: spec.kubernetes.join.nodeName,
// else the machine's host name in lower case (what the kubelet uses).
func nodeName(js *v1alpha1.JoinSpec, hostname string) string {
	if js.NodeName != "" {
		return js.NodeName
	}
	return strings.ToLower(hostname)
}

// joinedTo reports whether the kubelet kubeconfig the node holds
// (kubeconfig, "" for none) names the cluster at one of servers (the
// address the node uses, and the kubeconfig's). One that names another
// cluster is refused (reset.go resets such a node).
func joinedTo(kubeconfig string, servers []string) (bool, error) {
	if kubeconfig == "" {
		return false, nil
	}
	other, err := cluster.ServerOf([]byte(kubeconfig))
	switch {
	case err != nil:
		return false, fmt.Errorf("the node's %s cannot be read (%w): remove it, or run swdt join --reset", ops.JoinKubeconfig, err)
	case !slices.Contains(servers, other):
		return false, fmt.Errorf("the node is already joined to the cluster at %s, not %s: run swdt join --reset with that cluster's kubeconfig first; nothing was changed", other, servers[0])
	}
	return slices.Contains(servers, other), nil
}

// binaries are the provisioners a join installs: containerd and its
// helpers first, then the files of no service, kube-log-runner, the
// kubelet, kube-proxy.
func (p *prepared) binaries() []*v1alpha1.ProvisionerSpec {
	var out []*v1alpha1.ProvisionerSpec
	if p.containerd != nil {
		out = append(out, p.containerd)
	}
	out = append(append(out, p.helpers...), p.files...)
	if p.logRunner != nil {
		out = append(out, p.logRunner)
	}
	out = append(out, p.kubelet)
	if p.kubeProxy != nil {
		out = append(out, p.kubeProxy)
	}
	return out
}

// installsCNI reports whether a binary goes into ops.JoinCNIBinDir, which
// the node then makes safe with the kubelet's folders.
func (p *prepared) installsCNI() bool {
	for _, pr := range p.binaries() {
		if winpath.Within(ops.JoinCNIBinDir, pr.Destination) {
			return true
		}
	}
	return false
}

// extras are the provisioners a join installs besides the kubelet and
// containerd: the other binaries of containerd's service (when a
// provisioner feeds it) and those of no service.
func extras(k *v1alpha1.KubernetesSpec, containerd *v1alpha1.ProvisionerSpec) (helpers, files []*v1alpha1.ProvisionerSpec) {
	for i := range k.Provisioners {
		pr := &k.Provisioners[i]
		switch {
		case pr == containerd:
		case pr.ServiceName() == "":
			files = append(files, pr)
		case containerd != nil && strings.EqualFold(pr.ServiceName(), serviceOf(containerd)):
			helpers = append(helpers, pr)
		}
	}
	return helpers, files
}

// isKubernetesRelease reports whether pr's binary comes from a
// Kubernetes release (sourceURL release:kubernetes).
func isKubernetesRelease(pr *v1alpha1.ProvisionerSpec) bool {
	kind, ok := source.ReleaseKind(pr.SourceURL)
	return ok && kind == source.ReleaseKubernetes
}

// releaseOf is the release a control plane of version v runs: v1.37.2,
// without build metadata (v1.37.2+k3s1 runs v1.37.2's kubelet).
func releaseOf(v *version.Version) string {
	out := fmt.Sprintf("v%d.%d.%d", v.Major(), v.Minor(), v.Patch())
	if pre := v.PreRelease(); pre != "" {
		out += "-" + pre
	}
	return out
}

func (j *joiner) join(ctx context.Context, connect Connect) (*Report, error) {
	p, err := j.prepare(ctx, connect)
	if err != nil {
		return nil, err
	}
	defer func() { p.closeN() }() // the reboot of containers connects again
	js := j.spec.Spec.Kubernetes.Join
	rep := &Report{NodeName: p.name, Server: p.cluster.Server, Endpoint: &p.endpoint, Result: ResultUnchanged}
	if err := j.containers(ctx, connect, p, rep); err != nil {
		return nil, err
	}
	description := "swdt join " + p.name
	dns, err := kubeletDNS(ctx, js, p.cluster.DNS)
	if err != nil {
		return nil, err
	}
	j.dnsStep(dns)
	j.warnNoLogRunner(p)
	files, err := baseFiles(js, dns, p.cluster.CAData, p.containerd != nil)
	if err != nil {
		return nil, err
	}
	if p.kubeProxy != nil {
		j.step("creating kube-proxy's ServiceAccount token")
		kc, err := p.cluster.KubeProxyKubeconfig(ctx, p.name, 30*time.Second)
		if err != nil {
			return nil, err
		}
		files[ops.JoinFileKubeProxyKubeconfig] = string(kc)
	}
	if !p.joined {
		// A token an earlier run of this node left (it was killed, or
		// the cluster did not answer its deletion) goes first.
		if n, err := p.cluster.DeleteBootstrapTokens(ctx, description); err != nil {
			return nil, err
		} else if n > 0 {
			j.step(fmt.Sprintf("deleted %s an earlier join of %s left", words.Count(n, "bootstrap token"), p.name))
		}
		j.step("creating a bootstrap token")
		token, err := p.cluster.CreateBootstrapToken(ctx, description, j.opts.TokenTTL)
		if err != nil {
			return nil, err
		}
		// Deleted on every way out: the kubelet has its own certificate
		// once the Node registered, and a join that failed or was
		// interrupted leaves no credential behind (the next one makes
		// its own).
		defer func() { j.deleteToken(ctx, p, description) }()
		boot, err := p.cluster.BootstrapKubeconfig(token)
		if err != nil {
			return nil, err
		}
		files[ops.JoinFileBootstrapKubeconfig] = string(boot)
	}
	written, err := p.n.WriteJoinFiles(ctx, ops.JoinWriteRequest{Files: files, CNI: p.installsCNI(), Logs: p.logs()})
	for _, note := range written.Notes {
		j.opts.Observer.Warn("node " + j.spec.Name + ": " + note)
	}
	if err != nil {
		return nil, fmt.Errorf("write the kubelet's files: %w", err)
	}
	rep.FilesChanged = written.Changed
	// The Lease as it is before the install, on the node's clock: the
	// node's later renewals are compared with it, never with this
	// machine's clock (a VM's drifts).
	baseline := p.before
	if st, err := p.cluster.Node(ctx, p.name); err == nil {
		baseline = st
	}
	results, err := j.install(ctx, p, written.Changed)
	rep.Binaries = results
	if err != nil {
		rep.Result, rep.Error = ResultFailed, err.Error()
		return rep, nil
	}
	if err := j.setup(ctx, p, rep); err != nil {
		rep.Result, rep.Error = ResultFailed, err.Error()
		return rep, nil
	}
	var want cluster.Want
	rep.Result, want = outcome(written.Changed, p.before.Registered, results, p.version, baseline.LeaseRenewed)
	if rep.Rebooted || len(rep.FirewallRules) > 0 || len(rep.ServicesConfigured) > 0 {
		rep.Result = ResultChanged
	}
	timeout := DefaultTimeout
	if js.Timeout != nil {
		timeout = js.Timeout.Duration
	}
	j.step(fmt.Sprintf("waiting for Node %s to register (up to %s)", p.name, timeout))
	wctx, cancel := context.WithTimeout(ctx, timeout)
	rep.Node, err = p.cluster.WaitNode(wctx, p.name, want, j.opts.PollEvery)
	cancel()
	if err != nil {
		rep.Result = ResultFailed
		rep.Error = fmt.Sprintf("%v within %s: %s", err, timeout, p.kubeletLogHint(j.spec.Name))
		return rep, nil
	}
	rep.Note = readyNote(rep.Node)
	return rep, nil
}

// tokenCleanup bounds the deletion of a join's bootstrap token, which
// runs after ctx may have ended (Ctrl-C, SIGTERM).
const tokenCleanup = 15 * time.Second

// deleteToken deletes the node's bootstrap tokens (description names the
// node), also when ctx has ended; a token it cannot delete is reported
// with when it expires.
func (j *joiner) deleteToken(ctx context.Context, p *prepared, description string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tokenCleanup)
	defer cancel()
	if _, err := p.cluster.DeleteBootstrapTokens(dctx, description); err != nil {
		j.opts.Observer.Warn(fmt.Sprintf("node %s: its bootstrap token was not deleted (it expires on its own within %s, or swdt join and swdt join --reset delete it): %v",
			j.spec.Name, j.opts.TokenTTL, err))
	}
}

// baseFiles are the join's files that need no token: the cluster's CA,
// the kubelet's config (with the cluster's DNS) and, when a provisioner
// feeds containerd (containerd), its config:
// spec.kubernetes.join.containerdConfig's, else the default.
func baseFiles(js *v1alpha1.JoinSpec, dns cluster.DNS, ca []byte, containerd bool) (map[ops.JoinFile]string, error) {
	files := map[ops.JoinFile]string{ops.JoinFileCA: string(ca)}
	kc, err := KubeletConfig(js, dns)
	if err != nil {
		return nil, err
	}
	files[ops.JoinFileKubeletConfig] = string(kc)
	if containerd {
		cc := ContainerdConfig()
		if js.ContainerdConfig != "" {
			if cc, err = os.ReadFile(js.ContainerdConfig); err != nil {
				return nil, fmt.Errorf("spec.kubernetes.join.containerdConfig: %w; nothing was changed", err)
			}
		}
		files[ops.JoinFileContainerdConfig] = string(cc)
	}
	return files, nil
}

// outcome is a join's result once its files and binaries are in place,
// and what its Node must then show: changed when a file or binary
// changed, a service restarted, or the Node was not registered; a
// changed node's kubelet must then renew its Lease after the renewal
// seen before the install (renewed, the node's clock; zero: no Lease
// yet, any renewal will do), and every node's report version (when
// known).
func outcome(filesChanged []ops.JoinFile, registered bool, results []hotswap.Result, version string, renewed time.Time) (string, cluster.Want) {
	changed := len(filesChanged) > 0 || !registered
	for _, r := range results {
		changed = changed || r.Action != hotswap.ActionUnchanged || r.Restarted
	}
	want := cluster.Want{KubeletVersion: version}
	if !changed {
		return ResultUnchanged, want
	}
	want.RenewedAfter = renewed
	if renewed.IsZero() {
		want.RenewedAfter = time.Unix(0, 0)
	}
	return ResultChanged, want
}

// install puts containerd (when a provisioner feeds it) and the kubelet in
// place through one hot-swap, registering their services when missing,
// and restarts an unchanged one whose configuration file changed.
func (j *joiner) install(ctx context.Context, p *prepared, changed []ops.JoinFile) ([]hotswap.Result, error) {
	opts := j.opts.Swap
	opts.Command = "swdt join"
	opts.Observer = stepObserver{step: j.step}
	report, err := hotswap.Run(ctx, p.n, p.items(j.spec.Spec.Kubernetes.Join, changed), opts)
	if err != nil {
		return nil, err
	}
	var failed []string
	for _, res := range report.Results {
		if res.Failed() {
			failed = append(failed, fmt.Sprintf("%s %s: %s", res.Name, res.Action, res.Error))
		}
	}
	if len(failed) > 0 {
		return report.Results, errors.New(strings.Join(failed, "; "))
	}
	return report.Results, nil
}

// items are the hot-swap items of the join's binaries: the kubelet,
// containerd and kube-proxy registered when missing and restarted when
// their file changed (changed); containerd checked by its pipe unless its
// provisioner says how; a helper of a containerd service not registered
// yet put in as a plain file.
func (p *prepared) items(js *v1alpha1.JoinSpec, changed []ops.JoinFile) []hotswap.Item {
	var items []hotswap.Item
	ctrdRegistered := p.containerd != nil && slices.ContainsFunc(p.registered, func(s string) bool { return strings.EqualFold(s, serviceOf(p.containerd)) })
	for _, pr := range p.binaries() {
		b := target.Provisioner(*pr)
		it := hotswap.Item{Name: b.Name, Service: b.Service, Destination: b.Destination, Source: p.sources[pr], Helper: b.Helper,
			Force: b.Overwrite, HealthChecks: b.HealthChecks, StartChecks: b.HealthChecks}
		var reg ops.ServiceRegisterRequest
		switch {
		case pr == p.kubelet:
			reg = withLogRunner(Registration(js, p.kubelet, p.containerd, p.name), p.logRunner, ops.JoinKubeletLog)
			it.Restart = slices.Contains(changed, ops.JoinFileKubeletConfig)
		case pr == p.containerd:
			reg = ContainerdRegistration(pr)
			it.Restart = slices.Contains(changed, ops.JoinFileContainerdConfig)
			if len(it.HealthChecks) == 0 {
				it.HealthChecks = []ops.HealthCheckSpec{{NamedPipe: "containerd-containerd"}}
				it.StartChecks = it.HealthChecks
			}
		case pr == p.kubeProxy:
			reg = withLogRunner(KubeProxyRegistration(pr, p.kubelet, p.name), p.logRunner, ops.JoinKubeProxyLog)
			it.Restart = slices.Contains(changed, ops.JoinFileKubeProxyKubeconfig)
		case pr == p.logRunner:
			if !p.kubeletRegistered() {
				// The kubelet's service is registered in this run, to
				// run kube-log-runner: it goes in first as a plain file.
				it.Service, it.Helper = "", false
			}
		case it.Service != "" && !ctrdRegistered:
			// containerd's service is registered in this run, with its
			// main binary: a helper goes in first as a plain file.
			it.Service, it.Helper = "", false
		}
		if reg.Name != "" {
			it.Register = func(ctx context.Context) error {
				_, err := p.n.RegisterService(ctx, reg)
				return err
			}
		}
		items = append(items, it)
	}
	return items
}

// readyNote explains a Node that registered but is not Ready.
func readyNote(st cluster.NodeState) string {
	switch {
	case st.Ready == corev1.ConditionTrue:
		return ""
	case strings.Contains(st.ReadyMessage, "NetworkPluginNotReady") || strings.Contains(st.ReadyMessage, "cni"):
		return "NotReady only because no network plugin (CNI) runs on the node yet: deploy a CNI with Windows support and its HostProcess DaemonSets (Calico, or Flannel with VXLAN VNI 4096 and port 4789): see docs/join.md, What makes Ready"
	}
	return fmt.Sprintf("NotReady: %s: %s", st.ReadyReason, st.ReadyMessage)
}

// stepObserver shows the kubelet's hot-swap as steps.
type stepObserver struct{ step func(string) }

func (o stepObserver) Planned(p *hotswap.Plan) {
	for _, s := range p.Steps {
		o.step(fmt.Sprintf("plan: %s: %s (%s)", s.Item.Name, s.Action, s.Reason))
	}
}

func (o stepObserver) Step(msg string) { o.step(msg) }

func (o stepObserver) Upload(it hotswap.Item) func(sent int64) {
	o.step(fmt.Sprintf("staging %s (%d bytes)", it.Staged(), it.Source.Size))
	return func(int64) {}
}
