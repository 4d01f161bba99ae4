package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/swdt/internal/retry"
)

// NodeState is what the cluster says of one Node: whether it exists, the
// kubelet that reports it, its Ready condition and its Lease.
type NodeState struct {
	// Name is the Node's name.
	Name string `json:"name"`
	// Registered is false when no Node of that name exists.
	Registered bool `json:"registered"`
	// KubeletVersion is status.nodeInfo.kubeletVersion.
	KubeletVersion string `json:"kubeletVersion,omitempty"`
	// OS is status.nodeInfo.operatingSystem.
	OS string `json:"os,omitempty"`
	// Hostname is the Node's Hostname address.
	Hostname string `json:"hostname,omitempty"`
	// Ready is the Ready condition's status: True, False or Unknown.
	Ready corev1.ConditionStatus `json:"ready,omitempty"`
	// ReadyReason and ReadyMessage explain a Ready condition that is not
	// True (for example no network plugin yet).
	ReadyReason  string `json:"readyReason,omitempty"`
	ReadyMessage string `json:"readyMessage,omitempty"`
	// Conditions are the Node's conditions that are not in their healthy
	// state (Ready not True, a pressure or NetworkUnavailable True, any
	// Unknown): why a Node is NotReady, or what else ails it.
	Conditions []Condition `json:"conditions,omitempty"`
	// LeaseRenewed is the kube-node-lease Lease's renewTime.
	LeaseRenewed time.Time `json:"leaseRenewed,omitzero"`
}

// Node reads the Node name and its Lease. A missing Node is not an error:
// Registered is false.
func (c *Cluster) Node(ctx context.Context, name string) (NodeState, error) {
	st := NodeState{Name: name}
	n, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return st, nil
	}
	if err != nil {
		return st, c.explain(err)
	}
	st.Registered = true
	st.KubeletVersion = n.Status.NodeInfo.KubeletVersion
	st.OS = n.Status.NodeInfo.OperatingSystem
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeHostName {
			st.Hostname = a.Address
		}
	}
	st.Ready = corev1.ConditionUnknown
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			st.Ready, st.ReadyReason, st.ReadyMessage = cond.Status, cond.Reason, cond.Message
		}
	}
	st.Conditions = unhealthy(n.Status.Conditions)
	lease, err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		st.LeaseRenewed = leaseTime(lease)
	case !apierrors.IsNotFound(err):
		return st, c.explain(err)
	}
	return st, nil
}

func leaseTime(l *coordinationv1.Lease) time.Time {
	if l.Spec.RenewTime != nil {
		return l.Spec.RenewTime.Time
	}
	return time.Time{}
}

// Want is what WaitNode waits for.
type Want struct {
	// KubeletVersion, when set, must be the Node's kubeletVersion.
	KubeletVersion string
	// RenewedAfter, when set, the Lease must have been renewed after it
	// (proof that the kubelet now running talks to the cluster).
	RenewedAfter time.Time
	// Ready, when true, the Ready condition must be True.
	Ready bool
}

func (w Want) met(st NodeState) bool {
	return st.Registered &&
		(w.KubeletVersion == "" || st.KubeletVersion == w.KubeletVersion) &&
		(w.RenewedAfter.IsZero() || st.LeaseRenewed.After(w.RenewedAfter)) &&
		(!w.Ready || st.Ready == corev1.ConditionTrue)
}

// WaitNode polls the Node until want is met or ctx ends; it returns the
// last state seen, and on a timeout an error that says what was missing
// (an *UnmetError when the cluster answered).
func (c *Cluster) WaitNode(ctx context.Context, name string, want Want, every time.Duration) (NodeState, error) {
	var (
		last    NodeState
		read    bool
		lastErr error
	)
	err := retry.Poll(ctx, every, func(ctx context.Context) (bool, error) {
		st, err := c.Node(ctx, name)
		switch {
		case err == nil && want.met(st):
			last = st
			return true, nil
		case err == nil:
			last, read, lastErr = st, true, nil
		case !waitEnding(ctx, err):
			// A failure of its own, not the end of the wait cutting a
			// read short.
			lastErr = err
		}
		return false, nil
	})
	switch {
	case err == nil:
		return last, nil
	case lastErr != nil:
		return last, lastErr
	case !read:
		return last, fmt.Errorf("node %s: %w", name, err)
	}
	return last, &UnmetError{Node: name, Missing: missing(last, want)}
}

// waitEnding reports whether err is the end of the wait cutting a read
// short: the context is done, or client-go's rate limiter refused to wait
// past its deadline (golang.org/x/time/rate says so only in words).
func waitEnding(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	_, bounded := ctx.Deadline()
	return bounded && strings.Contains(err.Error(), "would exceed context deadline")
}

// UnmetError is WaitNode's error when the cluster answered but the Node
// did not become as wanted in time (not a failure to reach the cluster).
type UnmetError struct {
	// Node is the Node's name; Missing what it lacked.
	Node, Missing string
}

func (e *UnmetError) Error() string { return fmt.Sprintf("node %s: %s", e.Node, e.Missing) }

// missing says which part of want st lacks.
func missing(st NodeState, want Want) string {
	switch {
	case !st.Registered:
		return "no Node object registered"
	case want.KubeletVersion != "" && st.KubeletVersion != want.KubeletVersion:
		return fmt.Sprintf("the Node reports kubelet %s, not %s", st.KubeletVersion, want.KubeletVersion)
	case !want.RenewedAfter.IsZero() && !st.LeaseRenewed.After(want.RenewedAfter):
		return "its Lease was not renewed since the kubelet started"
	case want.Ready && st.Ready != corev1.ConditionTrue:
		return fmt.Sprintf("not Ready (%s: %s)", st.ReadyReason, st.ReadyMessage)
	}
	return "not as wanted"
}

// NodeNames lists the names of the Nodes selector (a label selector,
// such as kubernetes.io/os=windows) picks, sorted.
func (c *Cluster) NodeNames(ctx context.Context, selector string) ([]string, error) {
	list, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("list the Nodes of %s (%s): %w", c.Server, selector, err)
	}
	names := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	slices.Sort(names)
	return names, nil
}

// DeleteNode deletes the Node name and its Lease; a missing one is fine.
func (c *Cluster) DeleteNode(ctx context.Context, name string) error {
	err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Node %s: %w", name, c.explain(err))
	}
	err = c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Lease %s: %w", name, c.explain(err))
	}
	return nil
}

// BootstrapKubeconfig is the kubeconfig a kubelet starts TLS bootstrap
// with: the API server as the node reaches it, its CA and the bootstrap
// token.
func (c *Cluster) BootstrapKubeconfig(token Token) ([]byte, error) {
	return c.tokenKubeconfig("tls-bootstrap-token-user", token.Value)
}

// tokenKubeconfig is a kubeconfig of the API server and its CA in which
// user authenticates with a bearer token.
func (c *Cluster) tokenKubeconfig(user, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: c.nodeServer(), CertificateAuthorityData: c.CAData}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts[user+"@kubernetes"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: user}
	cfg.CurrentContext = user + "@kubernetes"
	return clientcmd.Write(*cfg)
}

// ServerOf reads the API server URL of a kubeconfig's current context
// (a node's kubelet.conf), to tell which cluster a node belongs to.
func ServerOf(kubeconfig []byte) (string, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return "", err
	}
	kctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return "", fmt.Errorf("no current context")
	}
	kc, ok := cfg.Clusters[kctx.Cluster]
	if !ok {
		return "", fmt.Errorf("context %s names no cluster", cfg.CurrentContext)
	}
	return kc.Server, nil
}
