// Package kubeconn is swdt's second transport: a node of a cluster reached
// by its Node name through the Kubernetes API, with no SSH. It runs a
// HostProcess pod pinned to the node (in a namespace of its own, labelled
// for the privileged Pod Security level), runs every command through
// pods/exec (WebSocket, falling back to SPDY as kubectl does), with stdin
// and stdout streamed, and reaches the node's files through one fixed
// script (package filescript) until swdt-agent, delivered and verified by
// pkg/node over these calls, runs the ops.
//
// *Conn implements node.Conn and node.Forwarder (pods/portforward of the
// pod, which shares the node's network): the verbs that need SSH itself
// (swdt ssh, reboot --wait) say the connection cannot.
// It never prints; every wait is bounded by the caller's context.
package kubeconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"sigs.k8s.io/swdt/internal/retry"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/remote"
)

// Defaults of Options.
const (
	// DefaultNamespace holds swdt's pods and service account.
	DefaultNamespace = "swdt-system"
	// DefaultImage is the upstream HostProcess base image: an empty
	// image, the container's processes being the host's.
	DefaultImage = "mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0"
	// DefaultPodTimeout bounds the wait for the pod to run.
	DefaultPodTimeout = 2 * time.Minute
)

// Names and labels of what the transport creates.
const (
	// ServiceAccount is the pods' account: it has no rights and no token
	// is mounted (the agent never calls the API).
	ServiceAccount = "swdt-agent"
	// Container is the pod's one container.
	Container = "agent"
	// LabelManagedBy marks every object swdt created; Reset deletes only
	// those.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "swdt"
	// LabelEnforce is Pod Security admission's enforce label; a
	// HostProcess pod needs the privileged level.
	LabelEnforce    = "pod-security.kubernetes.io/enforce"
	levelPrivileged = "privileged"
)

// Options say which node to reach and how.
type Options struct {
	// Kubeconfig is the kubeconfig's path; Context a context of it
	// (empty: its current context).
	Kubeconfig, Context string
	// Node is the Node's name.
	Node string
	// Namespace holds the pod (DefaultNamespace when empty).
	Namespace string
	// Image is the pod's image (DefaultImage when empty), for clusters
	// that pull from a registry of their own.
	Image string
	// PodTimeout bounds the wait for the pod to run (DefaultPodTimeout
	// when zero) when ctx has no earlier deadline.
	PodTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Image == "" {
		o.Image = DefaultImage
	}
	if o.PodTimeout == 0 {
		o.PodTimeout = DefaultPodTimeout
	}
	return o
}

// PodName is the name of the pod that reaches node.
func PodName(node string) string { return "swdt-agent-" + node }

// Conn is a node reached through the Kubernetes API (node.Conn).
type Conn struct {
	cfg    *rest.Config
	client kubernetes.Interface
	opts   Options
	pod    string
}

// ErrStreamLost is matched by the error of a call whose exec stream ended
// before the command's status came: the command may or may not have
// completed on the node. It matches remote.ErrConnectionLost too (what
// pkg/node's callers take for a connection lost during an op, whatever
// the transport).
var ErrStreamLost error = streamLost{}

type streamLost struct{}

func (streamLost) Error() string { return "exec stream lost" }

// Is makes a lost stream a lost connection.
func (streamLost) Is(target error) bool { return target == remote.ErrConnectionLost }

// restConfig loads the kubeconfig.
func restConfig(o Options) (*rest.Config, error) {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: o.Kubeconfig}
	if o.Kubeconfig == "" {
		rules = clientcmd.NewDefaultClientConfigLoadingRules()
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
	}
	return cfg, nil
}

// clientFor is o's REST config and a client of it.
func clientFor(o Options) (*rest.Config, *kubernetes.Clientset, error) {
	cfg, err := restConfig(o)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return cfg, client, nil
}

// Dial checks that the kubeconfig's user may do what the transport needs
// (changing nothing when it may not), then ensures the namespace, the
// service account and the node's HostProcess pod, and waits for the pod
// to run.
func Dial(ctx context.Context, o Options) (*Conn, error) {
	o = o.withDefaults()
	if o.Node == "" {
		return nil, errors.New("kubeconn: no Node name")
	}
	cfg, client, err := clientFor(o)
	if err != nil {
		return nil, err
	}
	c := &Conn{cfg: cfg, client: client, opts: o, pod: PodName(o.Node)}
	if err := c.checkAccess(ctx); err != nil {
		return nil, err
	}
	if _, err := client.CoreV1().Nodes().Get(ctx, o.Node, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("the cluster has no Node %s (kubectl get nodes lists them)", o.Node)
		}
		return nil, fmt.Errorf("read Node %s: %w", o.Node, err)
	}
	level, err := c.ensureNamespace(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.ensureServiceAccount(ctx); err != nil {
		return nil, err
	}
	if err := c.ensurePod(ctx, level); err != nil {
		return nil, err
	}
	return c, nil
}

// PodSecurityError is a namespace whose Pod Security admission forbids
// the HostProcess pod.
type PodSecurityError struct {
	// Namespace is the namespace; Level the level it enforces ("" when
	// the cluster's default refused the pod).
	Namespace, Level string
	// Err is the API server's refusal, when it refused.
	Err error
}

func (e *PodSecurityError) Error() string {
	what := "the cluster's default Pod Security level"
	if e.Level != "" {
		what = "Pod Security level " + e.Level
	}
	msg := fmt.Sprintf("namespace %s enforces %s, which forbids the HostProcess pod swdt runs on the node; "+
		"label it for the privileged level (kubectl label --overwrite namespace %s %s=%s) or name another namespace",
		e.Namespace, what, e.Namespace, LabelEnforce, levelPrivileged)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the API server's refusal.
func (e *PodSecurityError) Unwrap() error { return e.Err }

// NewNamespace is the namespace name as swdt creates it: labelled as
// swdt's (Reset deletes it) and for the privileged Pod Security level, so
// that the HostProcess pods are admitted in it. A workflow that keeps
// objects of its own there creates it so too.
func NewNamespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		LabelManagedBy: managedBy, LabelEnforce: levelPrivileged,
		"pod-security.kubernetes.io/warn": levelPrivileged, "pod-security.kubernetes.io/audit": levelPrivileged,
	}}}
}

// ensureNamespace creates the namespace, labelled for the privileged
// Pod Security level, unless it exists; it returns the level an existing
// one enforces ("" when its label does not say). Pod Security admission
// itself judges the pod (ensurePod).
func (c *Conn) ensureNamespace(ctx context.Context) (string, error) {
	nss := c.client.CoreV1().Namespaces()
	ns, err := nss.Get(ctx, c.opts.Namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := nss.Create(ctx, NewNamespace(c.opts.Namespace), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create namespace %s: %w", c.opts.Namespace, err)
		}
		return levelPrivileged, nil
	}
	if err != nil {
		return "", fmt.Errorf("read namespace %s: %w", c.opts.Namespace, err)
	}
	return ns.Labels[LabelEnforce], nil
}

func (c *Conn) ensureServiceAccount(ctx context.Context) error {
	no := false
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: ServiceAccount, Labels: map[string]string{LabelManagedBy: managedBy}},
		AutomountServiceAccountToken: &no}
	_, err := c.client.CoreV1().ServiceAccounts(c.opts.Namespace).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service account %s/%s: %w", c.opts.Namespace, ServiceAccount, err)
	}
	return nil
}

// podSpec is the HostProcess pod pinned to the node: SYSTEM, the host's
// network, every taint tolerated (a node being rolled may be cordoned or
// tainted), and a container that only waits: every command comes through
// exec.
func (c *Conn) podSpec() *corev1.Pod {
	yes, no, zero := true, false, int64(0)
	system := `NT AUTHORITY\SYSTEM`
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: c.pod, Namespace: c.opts.Namespace, Labels: map[string]string{
			LabelManagedBy: managedBy, "app.kubernetes.io/name": "swdt-agent",
		}},
		Spec: corev1.PodSpec{
			NodeName:                      c.opts.Node,
			NodeSelector:                  map[string]string{corev1.LabelOSStable: "windows"},
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			HostNetwork:                   true,
			ServiceAccountName:            ServiceAccount,
			AutomountServiceAccountToken:  &no,
			TerminationGracePeriodSeconds: &zero,
			SecurityContext: &corev1.PodSecurityContext{WindowsOptions: &corev1.WindowsSecurityContextOptions{
				HostProcess: &yes, RunAsUserName: &system,
			}},
			Containers: []corev1.Container{{
				Name:    Container,
				Image:   c.opts.Image,
				Command: []string{"powershell.exe", "-NoLogo", "-NoProfile", "-NonInteractive", "-Command", "while ($true) { Start-Sleep -Seconds 3600 }"},
			}},
		},
	}
}

// ensurePod creates the node's pod unless it runs, and waits for it to
// run. level is the Pod Security level the namespace enforces, for the
// error when admission refuses the pod.
func (c *Conn) ensurePod(ctx context.Context, level string) error {
	pods := c.client.CoreV1().Pods(c.opts.Namespace)
	p, err := pods.Get(ctx, c.pod, metav1.GetOptions{})
	switch {
	case err == nil && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded:
	case err == nil || apierrors.IsNotFound(err):
		if err == nil {
			if err := pods.Delete(ctx, c.pod, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete the ended pod %s/%s: %w", c.opts.Namespace, c.pod, err)
			}
		}
		_, err := pods.Create(ctx, c.podSpec(), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity") {
			return &PodSecurityError{Namespace: c.opts.Namespace, Level: level, Err: err}
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pod %s/%s on node %s: %w", c.opts.Namespace, c.pod, c.opts.Node, err)
		}
	default:
		return fmt.Errorf("read pod %s/%s: %w", c.opts.Namespace, c.pod, err)
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.PodTimeout)
	defer cancel()
	var last *corev1.Pod
	err = retry.Poll(wctx, 250*time.Millisecond, func(ctx context.Context) (bool, error) {
		p, err := pods.Get(ctx, c.pod, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		phase := "not created"
		if last != nil {
			phase = string(last.Status.Phase)
		}
		return fmt.Errorf("pod %s/%s on node %s is %s, not Running, after %s: see kubectl describe pod -n %s %s (the node's kubelet, the image %s): %w",
			c.opts.Namespace, c.pod, c.opts.Node, phase, c.opts.PodTimeout, c.opts.Namespace, c.pod, c.opts.Image, err)
	}
	return nil
}

// argv is a node.Conn command line as the pod runs it: an op of the
// agent (ops.CommandLine) runs the agent directly, since an exec is an
// argv and needs no shell to keep its quotes; any other line goes to
// cmd.exe.
func argv(cmd string) []string {
	if path, name, ok := ops.ParseCommandLine(cmd); ok {
		return []string{path, "op", name}
	}
	return []string{"cmd.exe", "/d", "/c", cmd}
}

// Exec runs one command line in the node's pod with stdin streamed to it
// and returns its exit status.
//
// pods/exec reports a success by sending no status at all (the
// streaming protocols up to v5), so a stream that drops looks like a
// command that exited 0. An op of the agent always prints its result
// line: an op that "succeeds" without one lost its stream
// (ErrStreamLost), as the file script's reply tells its calls.
func (c *Conn) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	args := argv(cmd)
	if len(args) != 3 || args[1] != "op" {
		return c.run(ctx, args, stdin, stdout, stderr)
	}
	seen := &markerWatch{}
	status, err := c.run(ctx, args, stdin, io.MultiWriter(stdout, seen.side(0)), io.MultiWriter(stderr, seen.side(1)))
	if err == nil && status == 0 && !seen.found() {
		return -1, fmt.Errorf("exec in pod %s/%s on node %s: %w (it ended with no status and no result line; the op may or may not have completed)",
			c.opts.Namespace, c.pod, c.opts.Node, ErrStreamLost)
	}
	return status, err
}

// markerWatch looks for ops.ResultMarker in two streams, across writes.
type markerWatch struct {
	mu    sync.Mutex
	tails [2][]byte
	seen  bool
}

type markerSide struct {
	w *markerWatch
	i int
}

func (w *markerWatch) side(i int) io.Writer { return markerSide{w, i} }

func (s markerSide) Write(p []byte) (int, error) {
	w := s.w
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen {
		return len(p), nil
	}
	buf := append(w.tails[s.i], p...)
	if bytes.Contains(buf, []byte(ops.ResultMarker)) {
		w.seen = true
		return len(p), nil
	}
	keep := min(len(buf), len(ops.ResultMarker)-1)
	w.tails[s.i] = append([]byte(nil), buf[len(buf)-keep:]...)
	return len(p), nil
}

func (w *markerWatch) found() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// run execs argv through pods/exec: WebSocket first, SPDY when the API
// server (or a proxy) cannot upgrade to it.
func (c *Conn) run(ctx context.Context, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	return c.stream(ctx, argv, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}

// Shell runs an interactive session with a terminal on the node, as
// kubectl exec -it does: cmd.exe in swdt's pod (as SYSTEM, in the node's
// own environment), on the pseudo console the runtime makes for an exec
// with a TTY; with opts.Command, cmd.exe /c runs that command line, as
// Windows OpenSSH runs a command. It returns the exit status.
func (c *Conn) Shell(ctx context.Context, opts remote.ShellOptions) (int, error) {
	argv := []string{"cmd.exe"}
	if opts.Command != "" {
		argv = append(argv, "/c", opts.Command)
	}
	sizes := &terminalSizes{first: opts.Size, resize: opts.Resize, done: ctx.Done()}
	if sizes.first.Width <= 0 || sizes.first.Height <= 0 {
		sizes.first = remote.WindowSize{Width: 80, Height: 24}
	}
	stdout := opts.Stdout
	if stdout == nil {
		stdout = io.Discard
	}
	return c.stream(ctx, argv, remotecommand.StreamOptions{Stdin: opts.Stdin, Stdout: stdout, Tty: true, TerminalSizeQueue: sizes})
}

// terminalSizes is a terminal's size for an exec with a TTY: first, then
// each change, until the session ends.
type terminalSizes struct {
	first  remote.WindowSize
	sent   bool
	resize <-chan remote.WindowSize
	done   <-chan struct{}
}

// Next returns the next size; nil ends the sizes.
func (s *terminalSizes) Next() *remotecommand.TerminalSize {
	if !s.sent {
		s.sent = true
		return &remotecommand.TerminalSize{Width: uint16(s.first.Width), Height: uint16(s.first.Height)}
	}
	select {
	case sz, ok := <-s.resize:
		if !ok {
			return nil
		}
		return &remotecommand.TerminalSize{Width: uint16(sz.Width), Height: uint16(sz.Height)}
	case <-s.done:
		return nil
	}
}

// stream execs argv through pods/exec with opts: WebSocket first, SPDY
// when the API server (or a proxy) cannot upgrade to it.
func (c *Conn) stream(ctx context.Context, argv []string, opts remotecommand.StreamOptions) (int, error) {
	req := c.client.CoreV1().RESTClient().Post().Namespace(c.opts.Namespace).Resource("pods").Name(c.pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: Container, Command: argv, Stdin: opts.Stdin != nil, Stdout: opts.Stdout != nil,
			Stderr: opts.Stderr != nil, TTY: opts.Tty}, scheme.ParameterCodec)
	u := req.URL()
	ex, err := executor(c.cfg, u)
	if err != nil {
		return -1, err
	}
	err = ex.StreamWithContext(ctx, opts)
	var exit utilexec.CodeExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit):
		return exit.Code, nil
	case ctx.Err() != nil:
		return -1, fmt.Errorf("exec in pod %s/%s: %w", c.opts.Namespace, c.pod, ctx.Err())
	case apierrors.IsForbidden(err):
		return -1, fmt.Errorf("exec in pod %s/%s: %w (your kubeconfig's user needs create on pods/exec in namespace %s)", c.opts.Namespace, c.pod, err, c.opts.Namespace)
	}
	if m := largeExitCode.FindStringSubmatch(err.Error()); m != nil {
		if status, perr := strconv.ParseUint(m[1], 10, 32); perr == nil {
			return int(status), nil
		}
	}
	return -1, fmt.Errorf("exec in pod %s/%s on node %s: %w (the command may or may not have completed): %w", c.opts.Namespace, c.pod, c.opts.Node, ErrStreamLost, err)
}

// largeExitCode is client-go's error for an exit status the exec
// protocol cannot carry (it takes 0-255): a Windows program's status often
// is larger (9009, a command cmd.exe does not recognize; 0xC000013A, a
// program ended by Ctrl-C). The error names the status, which is taken.
var largeExitCode = regexp.MustCompile(`invalid exit code value "([0-9]+)"`)

func executor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// Addr names the node as the API server reaches it: one Node is one
// machine.
func (c *Conn) Addr() string { return "kubernetes:" + c.cfg.Host + "/nodes/" + c.opts.Node }

// Close ends nothing: every call is an exec of its own, and the pod stays
// for the next run (Reset removes it).
func (c *Conn) Close() error { return nil }

// Reset deletes what Dial created for every node: the namespace when swdt
// created it (with its pods and service account), else swdt's pods and
// service account in it. It reports whether there was anything to
// delete.
func Reset(ctx context.Context, o Options) (bool, error) {
	o = o.withDefaults()
	_, client, err := clientFor(o)
	if err != nil {
		return false, err
	}
	ns, err := client.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read namespace %s: %w", o.Namespace, err)
	}
	if ns.Labels[LabelManagedBy] == managedBy {
		if err := client.CoreV1().Namespaces().Delete(ctx, o.Namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return false, fmt.Errorf("delete namespace %s: %w", o.Namespace, err)
		}
		return true, nil
	}
	sel := LabelManagedBy + "=" + managedBy
	found := false
	pods, err := client.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return false, fmt.Errorf("list swdt's pods in namespace %s: %w", o.Namespace, err)
	}
	for _, p := range pods.Items {
		found = true
		if err := client.CoreV1().Pods(o.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return found, fmt.Errorf("delete pod %s/%s: %w", o.Namespace, p.Name, err)
		}
	}
	err = client.CoreV1().ServiceAccounts(o.Namespace).Delete(ctx, ServiceAccount, metav1.DeleteOptions{})
	if err == nil {
		found = true
	} else if !apierrors.IsNotFound(err) {
		return found, fmt.Errorf("delete service account %s/%s: %w", o.Namespace, ServiceAccount, err)
	}
	return found, nil
}

// ResetNode deletes the pod Dial created for o.Node only, keeping the
// namespace and what other nodes use. It reports whether there was one.
func ResetNode(ctx context.Context, o Options) (bool, error) {
	o = o.withDefaults()
	if o.Node == "" {
		return false, errors.New("kubeconn: no Node name")
	}
	_, client, err := clientFor(o)
	if err != nil {
		return false, err
	}
	err = client.CoreV1().Pods(o.Namespace).Delete(ctx, PodName(o.Node), metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("delete pod %s/%s: %w", o.Namespace, PodName(o.Node), err)
	}
	return true, nil
}
