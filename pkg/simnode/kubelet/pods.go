package kubelet

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// HostExec runs argv on the node as an exec into a HostProcess container
// does (as SYSTEM, in the node's own environment), with the exec stream's
// input and output; cut drops the stream. tty is the exec's terminal when
// it asked for one (nil otherwise; stderr then goes nowhere: a terminal
// has one output). It returns the exit status.
type HostExec func(ctx context.Context, argv []string, tty *Terminal, stdin io.Reader, stdout, stderr io.Writer, cut func()) int

// Terminal is the terminal of an exec that asked for one (a pseudo
// console on Windows).
type Terminal struct {
	// Sizes are its sizes as the client sets them, the first one first;
	// closed when the exec ends.
	Sizes <-chan TerminalSize
}

// TerminalSize is a terminal's size in characters.
type TerminalSize struct{ Width, Height int }

// podHost is the part of the simulated kubelet that runs pods: the
// HostProcess pods bound to its Node become Running (their processes are
// the node's own: an exec runs in the node's environment through
// HostExec), and it serves exec into them on the kubelet's port, over
// TLS, through the upstream CRI streaming server, so that the API server
// proxies pods/exec to it as to a real kubelet. Other pods stay Pending:
// the simulation runs no containers.
type podHost struct {
	k      *simKubelet
	exec   HostExec
	stream streaming.Server
	srv    *http.Server
	port   int

	mu sync.Mutex
	// running are the pods it runs, by namespace/name.
	running map[string]*corev1.Pod
	// conns are the open connections to the port: a kubelet that stops
	// drops them, exec streams included (http.Server.Close leaves
	// hijacked ones open).
	conns map[*trackedConn]struct{}
}

// connKey holds an exec request's connection in its context: cutting the
// stream closes it.
type connKey struct{}

// trackedConn is a connection to the kubelet's port that says when it
// closes, whichever side closed it (the stream's reader closes it on
// EOF).
type trackedConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
	h      *podHost
}

// Close ends the connection as a server that is done with it: its
// output finished (FIN), it reads what the peer still sends until the
// peer closes too. Closing a socket with unread input makes the kernel
// reset the connection, and the peer then drops what it had received and
// not yet read: the exec's last output and its status.
func (c *trackedConn) Close() error {
	c.ended()
	if tcp, ok := c.Conn.(*net.TCPConn); ok {
		if err := tcp.CloseWrite(); err == nil {
			_ = tcp.SetReadDeadline(time.Now().Add(lingerLimit))
			_, _ = io.Copy(io.Discard, tcp)
		}
	}
	return c.Conn.Close()
}

// lingerLimit bounds how long a closed connection waits for its peer.
const lingerLimit = 5 * time.Second

// abort drops the connection at once, as a link that fails does.
func (c *trackedConn) abort() error {
	c.ended()
	return c.Conn.Close()
}

func (c *trackedConn) ended() {
	c.once.Do(func() {
		close(c.closed)
		c.h.mu.Lock()
		delete(c.h.conns, c)
		c.h.mu.Unlock()
	})
}

// trackingListener wraps each accepted connection in a trackedConn.
type trackingListener struct {
	net.Listener
	h *podHost
}

func (l trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, closed: make(chan struct{}), h: l.h}
	l.h.mu.Lock()
	l.h.conns[tc] = struct{}{}
	l.h.mu.Unlock()
	return tc, nil
}

// startPods listens on the kubelet's port (a free one on 127.0.0.1, the
// Node's InternalIP) and serves exec until ctx ends.
func (k *simKubelet) startPods(ctx context.Context, exec HostExec) (*podHost, error) {
	cert, err := selfSigned(k.name)
	if err != nil {
		return nil, err
	}
	// Callers authenticate with a client certificate of the cluster's CA
	// (the API server's --kubelet-client-certificate), as kubeadm's
	// kubelets require (authentication.x509.clientCAFile: the CA).
	raw, err := k.readFile(k.flags.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read %s for the cluster's CA: %w", k.flags.kubeconfig, err)
	}
	clientCAs, err := clusterCA(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k.flags.kubeconfig, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on the kubelet port: %w", err)
	}
	h := &podHost{k: k, exec: exec, port: l.Addr().(*net.TCPAddr).Port, running: map[string]*corev1.Pod{}, conns: map[*trackedConn]struct{}{}}
	cfg := streaming.DefaultConfig
	cfg.BaseURL = &url.URL{Scheme: "https", Host: l.Addr().String(), Path: "/cri/"}
	cfg.StreamIdleTimeout = 10 * time.Minute
	h.stream, err = streaming.NewServer(cfg, h)
	if err != nil {
		l.Close()
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/", h.serveExec)
	mux.HandleFunc("/portForward/", h.servePortForward)
	mux.Handle("/cri/", h.stream)
	h.srv = &http.Server{
		Handler: mux,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs},
		ReadHeaderTimeout: 30 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*tls.Conn); ok {
				c = tc.NetConn()
			}
			return context.WithValue(ctx, connKey{}, c)
		},
	}
	go func() { _ = h.srv.ServeTLS(trackingListener{Listener: l, h: h}, "", "") }()
	go func() {
		// A kubelet's port goes with its process: a stopped service
		// serves nothing more and drops its streams.
		for k.wait(ctx, processWatch) {
		}
		h.close()
	}()
	return h, nil
}

// processWatch is how often the pod runner looks whether the kubelet's
// process still runs.
const processWatch = 20 * time.Millisecond

// close stops serving and closes every connection, exec streams
// included.
func (h *podHost) close() {
	h.srv.Close()
	h.mu.Lock()
	conns := make([]*trackedConn, 0, len(h.conns))
	for c := range h.conns {
		conns = append(conns, c)
	}
	h.mu.Unlock()
	for _, c := range conns {
		c.abort()
	}
}

// serveExec is the kubelet API's /exec/{namespace}/{pod}/{container}
// (and with the pod's UID before the container): the request is handed
// to the streaming server, as a kubelet that proxies its runtime's
// streams does.
func (h *podHost) serveExec(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/exec/"), "/")
	if len(parts) != 3 && len(parts) != 4 {
		http.NotFound(w, r)
		return
	}
	ns, name, container := parts[0], parts[1], parts[len(parts)-1]
	pod, ok := h.servedPod(w, ns, name)
	if !ok {
		return
	}
	if !hasContainer(pod, container) {
		http.Error(w, fmt.Sprintf("container %q of pod %s/%s is not running on node %s", container, ns, name, h.k.name), http.StatusNotFound)
		return
	}
	// The kubelet API's parameters (the API server's are stdin, stdout,
	// stderr, tty).
	q := r.URL.Query()
	set := func(name string) bool { return q.Get(name) == "1" || q.Get(name) == "true" }
	resp, err := h.stream.GetExec(&runtimeapi.ExecRequest{
		ContainerId: ns + "/" + name + "/" + container,
		Cmd:         q["command"],
		Tty:         set("tty"),
		Stdin:       set("input"),
		Stdout:      set("output"),
		Stderr:      set("error"),
	})
	h.handOver(w, r, resp.GetUrl(), err)
}

// servedPod is the running pod ns/name a request names; when there is
// none (or the kubelet is stopping) it answers the request and ok is
// false.
func (h *podHost) servedPod(w http.ResponseWriter, ns, name string) (pod *corev1.Pod, ok bool) {
	if !h.k.alive() {
		http.Error(w, "the kubelet is stopping", http.StatusServiceUnavailable)
		return nil, false
	}
	h.mu.Lock()
	pod = h.running[ns+"/"+name]
	h.mu.Unlock()
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %s/%s is not running on node %s", ns, name, h.k.name), http.StatusNotFound)
		return nil, false
	}
	return pod, true
}

// servePortForward is the kubelet API's /portForward/{namespace}/{pod}
// (and with the pod's UID after it): handed to the streaming server as
// serveExec hands an exec.
func (h *podHost) servePortForward(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/portForward/"), "/")
	if len(parts) != 2 && len(parts) != 3 {
		http.NotFound(w, r)
		return
	}
	ns, name := parts[0], parts[1]
	if _, ok := h.servedPod(w, ns, name); !ok {
		return
	}
	resp, err := h.stream.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: ns + "/" + name})
	h.handOver(w, r, resp.GetUrl(), err)
}

// handOver serves r on the streaming server, at the path of the URL it
// gave for the request (err: why it gave none).
func (h *podHost) handOver(w http.ResponseWriter, r *http.Request, streamURL string, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	u, err := url.Parse(streamURL)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	r.URL.Path, r.URL.RawQuery = u.Path, ""
	h.stream.ServeHTTP(w, r)
}

func hasContainer(pod *corev1.Pod, name string) bool {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// Exec runs cmd on the node (streaming.Runtime).
func (h *podHost) Exec(ctx context.Context, _ string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommandserver.TerminalSize) error {
	if in == nil {
		in = strings.NewReader("")
	}
	var stdout, stderr io.Writer = io.Discard, io.Discard
	if out != nil {
		stdout = out
	}
	if errw != nil {
		stderr = errw
	}
	// The command's session ends with its stream's connection, as an
	// SSH session's does.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cut := func() {}
	if c, ok := ctx.Value(connKey{}).(*trackedConn); ok {
		cut = func() { c.abort() }
		go func() {
			select {
			case <-c.closed:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	var term *Terminal
	if tty {
		sizes := make(chan TerminalSize)
		term = &Terminal{Sizes: sizes}
		go func() {
			defer close(sizes)
			for {
				select {
				case sz, ok := <-resize:
					if !ok {
						return
					}
					select {
					case sizes <- TerminalSize{Width: int(sz.Width), Height: int(sz.Height)}:
					case <-ctx.Done():
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	status := h.exec(ctx, cmd, term, in, stdout, stderr, cut)
	// The command's output ends (EOF on each stream) before its status
	// is sent, as a runtime closes a finished process's pipes.
	for _, w := range []io.WriteCloser{out, errw} {
		if w != nil {
			w.Close()
		}
	}
	if status != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command terminated with exit code %d", status), Code: status}
	}
	return nil
}

// Attach is not modelled (streaming.Runtime).
func (h *podHost) Attach(context.Context, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommandserver.TerminalSize) error {
	return errors.New("simnode's kubelet does not attach to containers")
}

// PortForward carries stream to port on the node's loopback
// (streaming.Runtime), as containerd does for a HostProcess pod, which
// shares the node's network. The simulated node has no network of its
// own: its loopback is the loopback of the machine simnode runs on (as
// for SSH's direct-tcpip). A port nothing listens on is an error, which
// the streaming server sends on the stream's error stream.
func (h *podHost) PortForward(ctx context.Context, podSandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	h.mu.Lock()
	pod := h.running[podSandboxID]
	h.mu.Unlock()
	if pod == nil {
		return fmt.Errorf("pod %s is not running on node %s", podSandboxID, h.k.name)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
	var d net.Dialer
	target, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("failed to connect to localhost:%d in pod %s: %w", port, podSandboxID, err)
	}
	defer target.Close()
	go func() {
		_, _ = io.Copy(target, stream)
		if tc, ok := target.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	back := make(chan struct{})
	go func() {
		defer close(back)
		_, _ = io.Copy(stream, target)
	}()
	// The stream ends when the node's side has said all it will (a
	// client that stopped sending still gets the answer), or when the
	// client went away.
	select {
	case <-back:
	case <-ctx.Done():
	}
	return nil
}

// hostProcess reports whether the pod runs on the host as a HostProcess
// pod does: hostNetwork and hostProcess set for the pod or each container.
func hostProcess(pod *corev1.Pod) bool {
	if !pod.Spec.HostNetwork {
		return false
	}
	podLevel := false
	if sc := pod.Spec.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
		podLevel = *sc.WindowsOptions.HostProcess
	}
	for _, c := range pod.Spec.Containers {
		hp := podLevel
		if sc := c.SecurityContext; sc != nil && sc.WindowsOptions != nil && sc.WindowsOptions.HostProcess != nil {
			hp = *sc.WindowsOptions.HostProcess
		}
		if !hp {
			return false
		}
	}
	return true
}

// sync starts the HostProcess pods bound to the Node (their status
// Running) and confirms the deletion of pods being deleted, as the
// kubelet's status manager does.
func (h *podHost) sync(ctx context.Context, client kubernetes.Interface) error {
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", h.k.name).String(),
	})
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		key := pod.Namespace + "/" + pod.Name
		if pod.DeletionTimestamp != nil {
			h.forget(key)
			zero := int64(0)
			err := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID},
			})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("delete pod %s: %w", key, err)
			}
			continue
		}
		if !hostProcess(pod) {
			continue
		}
		seen[key] = true
		if pod.Status.Phase == corev1.PodRunning {
			h.remember(key, pod)
			continue
		}
		now := metav1.NewTime(h.k.now())
		pod.Status.Phase = corev1.PodRunning
		pod.Status.HostIP, pod.Status.PodIP = "127.0.0.1", "127.0.0.1"
		pod.Status.StartTime = &now
		pod.Status.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
		pod.Status.ContainerStatuses = nil
		for _, c := range pod.Spec.Containers {
			pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: new(true),
				ContainerID: "containerd://" + string(pod.UID) + "-" + c.Name,
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
		updated, err := client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("post the status of pod %s: %w", key, err)
		}
		h.k.infof("started HostProcess pod %s", key)
		h.remember(key, updated)
	}
	h.mu.Lock()
	for key := range h.running {
		if !seen[key] {
			delete(h.running, key)
		}
	}
	h.mu.Unlock()
	return nil
}

func (h *podHost) remember(key string, pod *corev1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.running[key] = pod
}

func (h *podHost) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.running, key)
}

// clusterCA is the CA of the cluster a kubeconfig's current context
// names.
func clusterCA(kubeconfig []byte) (*x509.CertPool, error) {
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		return nil, err
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil || cfg.Clusters[kctx.Cluster] == nil {
		return nil, errors.New("no cluster for the current context")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(cfg.Clusters[kctx.Cluster].CertificateAuthorityData) {
		return nil, errors.New("no CA certificate in the cluster's certificate-authority-data")
	}
	return pool, nil
}

// selfSigned is the kubelet's serving certificate, self-signed as a
// kubelet without serverTLSBootstrap makes it.
func selfSigned(host string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: host + "@" + fmt.Sprint(now.Unix())},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{host},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
