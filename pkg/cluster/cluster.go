// Package cluster is swdt's view of the developer's control plane: it reads
// a kubeconfig, checks that the control plane answers and lets its user
// create bootstrap tokens, enforces the kubelet version-skew policy, creates
// and deletes bootstrap tokens as `kubeadm token create` does, and reads the
// Node and Lease a Windows kubelet keeps.
//
// It talks to the API server only (client-go); it never touches a Windows
// node, and it prints nothing.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// BootstrapGroup is the group kubeadm gives node bootstrap tokens; its
// bindings let a token post a node-client CSR that is approved at once.
const BootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"

// Cluster is a connection to one control plane.
type Cluster struct {
	// Server is the API server URL from the kubeconfig.
	Server string
	// NodeServer is the API server URL as the node reaches it
	// (ResolveNodeEndpoint); "" until resolved, when Server is used.
	NodeServer string
	// CAData is the cluster CA bundle (PEM) from the kubeconfig.
	CAData []byte
	// Context is the kubeconfig context in use.
	Context string
	// Source is the kubeconfig file that was read.
	Source string

	client kubernetes.Interface
}

// DefaultKubeconfig is $KUBECONFIG's first file, else ~/.kube/config.
func DefaultKubeconfig() string {
	if v := os.Getenv("KUBECONFIG"); v != "" {
		return filepath.SplitList(v)[0]
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".kube", "config")
}

// Connect reads kubeconfig (DefaultKubeconfig when empty) with the given
// context (its current context when empty). It does not contact the server.
func Connect(kubeconfig, contextName string) (*Cluster, error) {
	if kubeconfig == "" {
		kubeconfig = DefaultKubeconfig()
	}
	raw, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig %s: %w (set spec.kubernetes.join.kubeconfig or KUBECONFIG)", kubeconfig, err)
	}
	if contextName == "" {
		contextName = raw.CurrentContext
	}
	kctx, ok := raw.Contexts[contextName]
	if !ok || contextName == "" {
		return nil, fmt.Errorf("kubeconfig %s has no context %q (contexts: %s)", kubeconfig, contextName, strings.Join(contextNames(raw), ", "))
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(*raw, contextName, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s, context %s: %w", kubeconfig, contextName, err)
	}
	return newCluster(cfg, raw.Clusters[kctx.Cluster], kubeconfig, contextName)
}

func newCluster(cfg *rest.Config, kc *clientcmdapi.Cluster, source, contextName string) (*Cluster, error) {
	cfg.Timeout = 30 * time.Second
	// client-go's default (5 requests a second, bursts of 10) is for
	// controllers; a rollout watches several Nodes and their Leases at
	// once, and a wait cut short by the limiter would hide why the Node
	// was not ready. kubectl allows as much.
	cfg.QPS, cfg.Burst = 50, 100
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("read the cluster CA %s: %w", cfg.CAFile, err)
		}
	}
	if len(ca) == 0 && kc != nil && !kc.InsecureSkipTLSVerify {
		return nil, fmt.Errorf("kubeconfig %s, context %s: the cluster has no certificate-authority; a node cannot verify the API server without it", source, contextName)
	}
	return &Cluster{Server: cfg.Host, CAData: ca, Context: contextName, Source: source, client: client}, nil
}

func contextNames(cfg *clientcmdapi.Config) []string {
	var out []string
	for n := range cfg.Contexts {
		out = append(out, n)
	}
	return out
}

// Client is the clientset, for tests and the cluster check.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// Check contacts the control plane and returns its version. It fails with
// a clear error when the server cannot be reached, refuses the
// credentials, or the user may not create bootstrap tokens (Secrets in
// kube-system).
func (c *Cluster) Check(ctx context.Context) (*version.Version, error) {
	info, err := c.client.Discovery().ServerVersion()
	if err != nil {
		return nil, c.explain(err)
	}
	v, err := version.ParseSemantic(info.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("the control plane at %s reports version %q: %w", c.Server, info.GitVersion, err)
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: metav1.NamespaceSystem, Verb: "create", Resource: "secrets"},
	}}
	res, err := c.client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil, c.explain(err)
	}
	if !res.Status.Allowed {
		return nil, fmt.Errorf("the kubeconfig's user (context %s) may not create Secrets in kube-system, so swdt cannot create a bootstrap token: use an admin kubeconfig (kind, minikube and kubeadm write one)", c.Context)
	}
	return v, nil
}

// explain turns a client error into one that says what to do.
func (c *Cluster) explain(err error) error {
	var netErr net.Error
	var urlErr *url.Error
	switch {
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("the control plane at %s refused the credentials of context %s (expired certificate or token?): %w", c.Server, c.Context, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("the control plane at %s denied context %s: %w", c.Server, c.Context, err)
	case errors.As(err, &netErr), errors.As(err, &urlErr):
		return fmt.Errorf("cannot reach the control plane at %s (context %s of %s): is the cluster running and the address reachable from here? %w", c.Server, c.Context, c.Source, err)
	}
	return fmt.Errorf("control plane %s: %w", c.Server, err)
}

// CheckSkew applies the Kubernetes version-skew policy to a kubelet: not
// newer than the API server, and at most three minor versions older.
func CheckSkew(kubelet, server *version.Version) error {
	if kubelet.Major() != server.Major() {
		return fmt.Errorf("kubelet %s and API server %s differ in major version", kubelet, server)
	}
	switch {
	case kubelet.Minor() > server.Minor():
		return fmt.Errorf("kubelet %s is newer than the API server %s; the version-skew policy forbids it: build or choose a kubelet of %d.%d or older", kubelet, server, server.Major(), server.Minor())
	case server.Minor()-kubelet.Minor() > 3:
		return fmt.Errorf("kubelet %s is more than three minor versions older than the API server %s; the version-skew policy forbids it: use %d.%d or newer", kubelet, server, server.Major(), server.Minor()-3)
	}
	return nil
}

// Token is a bootstrap token swdt created.
type Token struct {
	// ID is the public part; the Secret is bootstrap-token-ID.
	ID string
	// Value is ID.SECRET, what a kubelet presents.
	Value string
}

// CreateBootstrapToken creates a bootstrap token Secret in kube-system as
// `kubeadm token create` does (authentication and signing usages, kubeadm's
// node group), valid for ttl, with a description naming the node.
func (c *Cluster) CreateBootstrapToken(ctx context.Context, description string, ttl time.Duration) (Token, error) {
	value, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return Token{}, err
	}
	id, secret, _ := strings.Cut(value, ".")
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      bootstraputil.BootstrapTokenSecretName(id),
			Namespace: metav1.NamespaceSystem,
			Labels:    map[string]string{ManagedByLabel: ManagedBy},
		},
		Type: bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               id,
			bootstrapapi.BootstrapTokenSecretKey:           secret,
			bootstrapapi.BootstrapTokenDescriptionKey:      description,
			bootstrapapi.BootstrapTokenExpirationKey:       time.Now().Add(ttl).UTC().Format(time.RFC3339),
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      BootstrapGroup,
		},
	}
	if _, err := c.client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return Token{}, fmt.Errorf("create bootstrap token: %w", c.explain(err))
	}
	return Token{ID: id, Value: value}, nil
}

// ManagedByLabel marks the objects swdt creates in a cluster, so that
// `swdt join --reset` deletes only its own.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// ManagedBy is ManagedByLabel's value.
const ManagedBy = "swdt"

// DeleteBootstrapTokens deletes swdt's bootstrap tokens whose description
// is description, and reports how many it deleted.
func (c *Cluster) DeleteBootstrapTokens(ctx context.Context, description string) (int, error) {
	list, err := c.client.CoreV1().Secrets(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedBy})
	if err != nil {
		return 0, c.explain(err)
	}
	n := 0
	for _, s := range list.Items {
		if s.Type != bootstrapapi.SecretTypeBootstrapToken || string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey]) != description {
			continue
		}
		err := c.client.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return n, fmt.Errorf("delete bootstrap token %s: %w", s.Name, c.explain(err))
		}
		n++
	}
	return n, nil
}
