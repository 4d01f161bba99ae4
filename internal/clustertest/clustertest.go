// Package clustertest runs a real Kubernetes control plane on loopback for
// the cluster test tier: etcd (Debian's etcd-server), kube-apiserver and
// kube-controller-manager of the release pinned in hack/cluster (built once
// by `make cluster-bins` into the user cache), with a generated PKI and the
// RBAC bindings `kubeadm init` creates for joining nodes (bootstrap tokens,
// CSR auto-approval).
//
// StartCRI runs the fake container runtime the Wine tier's kubelet.exe
// uses. When a binary is missing the test is skipped, except under CI=true, where
// it fails: a green CI run means the tier ran.
package clustertest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"sigs.k8s.io/swdt/internal/syncbuf"
)

// Version is the Kubernetes release of the control plane; hack/cluster's
// go.mod pins the same one (TestVersionMatchesModule).
const Version = "v1.37.2"

// EtcdPath is Debian's etcd-server binary.
const EtcdPath = "/usr/bin/etcd"

// BinDir is where `make cluster-bins` puts kube-apiserver and
// kube-controller-manager: $SWDT_CLUSTER_BIN, else the user cache.
func BinDir() string {
	if d := os.Getenv("SWDT_CLUSTER_BIN"); d != "" {
		return d
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(cache, "swdt", "cluster", Version, "bin")
}

// Cluster is a running control plane.
type Cluster struct {
	// Dir holds the PKI, kubeconfigs, data and logs.
	Dir string
	// Server is the API server's URL as this process (the laptop)
	// reaches it: on a Network (Separate), a port of the laptop's
	// loopback forwarded to the control plane, as kind publishes it.
	Server string
	// NodeServer is the API server's URL as the node reaches it: the
	// control plane's address on a Network, else Server.
	NodeServer string
	// Net is the Network the control plane runs on (Separate), or nil.
	Net *Network
	// Kubeconfig is a cluster-admin kubeconfig (context "admin").
	Kubeconfig string
	// CAFile is the cluster CA's certificate (PEM).
	CAFile string
	// Client is a cluster-admin client.
	Client kubernetes.Interface

	logs    map[string]*syncbuf.Buffer
	procs   []*proc
	pki     *pki
	closers []func()
	opts    options
}

// Option changes what Start runs.
type Option func(*options)

type options struct{ separate, clusterInfo bool }

// Separate runs the control plane on a machine of its own, the CP of a
// new Network (StartNetwork): etcd, kube-apiserver (on the control
// plane's address, port 6443, with that address in its certificate) and
// kube-controller-manager. The laptop reaches it as kind's users do,
// through a port of its loopback forwarded to it (Server); the node at
// its address (NodeServer).
func Separate() Option { return func(o *options) { o.separate = true } }

// WithClusterInfo creates kube-public/cluster-info as kubeadm init does:
// a kubeconfig naming NodeServer and the cluster CA, readable by
// anonymous users. Without it the cluster has none, as a bare control
// plane.
func WithClusterInfo() Option { return func(o *options) { o.clusterInfo = true } }

// proc is one control-plane process; done closes when it has exited.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

// Binary returns the path of a binary of the tier: etcd, or one that
// `make cluster-bins` builds into BinDir (kube-apiserver,
// kube-controller-manager, kubelet.exe, kubelet-dev.exe, crifake). When it
// is missing the test is skipped, or fails under CI=true.
func Binary(t testing.TB, name string) string {
	t.Helper()
	path := filepath.Join(BinDir(), name)
	if name == "etcd" {
		path = EtcdPath
	}
	if _, err := os.Stat(path); err != nil {
		msg := fmt.Sprintf("%s not found (make test-deps cluster-bins): %v", name, err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// Start runs etcd, kube-apiserver and kube-controller-manager for the
// duration of the test and waits until the API server is ready: on
// loopback, or on a machine of their own (Separate).
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	bins := map[string]string{}
	for _, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		bins[name] = Binary(t, name)
	}
	c := &Cluster{Dir: t.TempDir(), logs: map[string]*syncbuf.Buffer{}}
	for _, o := range opts {
		o(&c.opts)
	}
	if c.opts.separate {
		c.Net = StartNetwork(t)
	}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			for name, b := range c.logs {
				t.Logf("%s log (tail):\n%s", name, tail(b.String(), 40))
			}
		}
	})
	if err := c.start(bins); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *Cluster) start(bins map[string]string) error {
	pkiDir := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pkiDir, 0o700); err != nil {
		return err
	}
	p, err := newPKI(pkiDir)
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	// On a Network the processes run in the control plane's namespace,
	// where the ports are theirs: kubeadm's.
	cpAddr := "127.0.0.1"
	etcdPort, peerPort, apiPort, cmPort := freePort(), freePort(), freePort(), freePort()
	bind := "127.0.0.1"
	loop := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")}
	if c.Net != nil {
		cpAddr = c.Net.CPAddr.String()
		etcdPort, peerPort, apiPort, cmPort = 2379, 2380, 6443, 10257
		bind = "0.0.0.0"
		loop = append(loop, c.Net.CPAddr)
	}
	certs := []struct {
		name    string
		subject pkix.Name
		server  bool
	}{
		{"apiserver", pkix.Name{CommonName: "kube-apiserver"}, true},
		{"admin", pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}}, false},
		{"controller-manager", pkix.Name{CommonName: "system:kube-controller-manager"}, false},
		// What the API server presents to kubelets (exec, logs), as
		// kubeadm names it.
		{"apiserver-kubelet-client", pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"kubeadm:cluster-admins"}}, false},
	}
	for _, ct := range certs {
		usage, ips, dns := clientAuth, []net.IP(nil), []string(nil)
		if ct.server {
			usage, ips, dns = serverAuth, loop, []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}
		}
		if err := p.issue(ct.name, ct.subject, usage, ips, dns); err != nil {
			return err
		}
	}
	c.CAFile = p.path("ca.crt")
	c.pki = p

	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if err := c.run("etcd", bins["etcd"],
		"--name=default", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--log-level=warn",
	); err != nil {
		return err
	}
	local := "https://127.0.0.1:" + strconv.Itoa(apiPort)
	c.Server, c.NodeServer = local, local
	if c.Net != nil {
		c.NodeServer = "https://" + net.JoinHostPort(cpAddr, strconv.Itoa(apiPort))
		fwd, err := c.forward(net.JoinHostPort(cpAddr, strconv.Itoa(apiPort)))
		if err != nil {
			return err
		}
		c.Server = "https://" + fwd
	}
	if err := c.run("kube-apiserver", bins["kube-apiserver"],
		"--etcd-servers="+etcdURL,
		"--bind-address="+bind, "--advertise-address="+cpAddr,
		"--secure-port="+strconv.Itoa(apiPort),
		"--endpoint-reconciler-type=none",
		"--tls-cert-file="+p.path("apiserver.crt"), "--tls-private-key-file="+p.path("apiserver.key"),
		"--client-ca-file="+p.path("ca.crt"),
		"--service-account-key-file="+p.path("sa.pub"),
		"--service-account-signing-key-file="+p.path("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--authorization-mode=Node,RBAC",
		"--enable-bootstrap-token-auth=true",
		"--enable-admission-plugins=NodeRestriction",
		// As kubeadm: the kubelet's address is its InternalIP (a simulated
		// node's hostname does not resolve).
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		// As kubeadm: privileged (and HostProcess) pods are allowed; Pod
		// Security admission decides per namespace.
		"--allow-privileged=true",
		"--kubelet-client-certificate="+p.path("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p.path("apiserver-kubelet-client.key"),
		"--profiling=false",
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"),
	); err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, "admin", c.Server, p.path("ca.crt"), p.path("admin.crt"), p.path("admin.key")); err != nil {
		return err
	}
	cmConfig := filepath.Join(c.Dir, "controller-manager.kubeconfig")
	if err := writeKubeconfig(cmConfig, "controller-manager", local, p.path("ca.crt"), p.path("controller-manager.crt"), p.path("controller-manager.key")); err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	c.Client = client
	if err := c.waitReady(2 * time.Minute); err != nil {
		return err
	}
	if err := c.run("kube-controller-manager", bins["kube-controller-manager"],
		"--kubeconfig="+cmConfig,
		"--authentication-kubeconfig="+cmConfig, "--authorization-kubeconfig="+cmConfig,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(cmPort),
		"--leader-elect=false",
		"--controllers=certificatesigningrequest-signing-controller,certificatesigningrequest-approving-controller,certificatesigningrequest-cleaner-controller,bootstrap-signer-controller,token-cleaner-controller,root-ca-certificate-publisher-controller,serviceaccount-token-controller",
		"--cluster-signing-cert-file="+p.path("ca.crt"), "--cluster-signing-key-file="+p.path("ca.key"),
		"--root-ca-file="+p.path("ca.crt"),
		"--service-account-private-key-file="+p.path("sa.key"),
		"--use-service-account-credentials=true",
		"--profiling=false",
	); err != nil {
		return err
	}
	if err := c.applyKubeadmRBAC(); err != nil {
		return err
	}
	if c.opts.clusterInfo {
		return c.createClusterInfo()
	}
	return nil
}

// waitReady polls /readyz until it answers ok or the budget ends.
func (c *Cluster) waitReady(budget time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var last error
	for {
		body, err := c.Client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err == nil && bytes.Equal(bytes.TrimSpace(body), []byte("ok")) {
			return nil
		}
		last = err
		if err := c.exited(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready within %s: %v", budget, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// applyKubeadmRBAC creates the bindings `kubeadm init` creates so that a
// bootstrap token of group system:bootstrappers:kubeadm:default-node-token
// can post a node-client CSR that the controller manager approves, and
// nodes can renew their client certificates.
func (c *Cluster) applyKubeadmRBAC() error {
	const group = "system:bootstrappers:kubeadm:default-node-token"
	bindings := []struct{ name, role, group string }{
		{"kubeadm:kubelet-bootstrap", "system:node-bootstrapper", group},
		{"kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", group},
		{"kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, b := range bindings {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: b.name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: b.group}},
		}
		_, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ClusterRoleBinding %s: %w", b.name, err)
		}
	}
	return nil
}

func (c *Cluster) run(name, path string, args ...string) error {
	log := &syncbuf.Buffer{}
	c.logs[name] = log
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = dieWithParent()
	if c.Net != nil {
		cmd = c.Net.Command(c.Net.CP, path, args...)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return nil
}

// exited reports a control-plane process that has already ended.
func (c *Cluster) exited() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v):\n%s", p.name, p.cmd.ProcessState, tail(c.logs[p.name].String(), 30))
		default:
		}
	}
	return nil
}

func (c *Cluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
	c.procs = nil
	for _, fn := range c.closers {
		fn()
	}
	c.closers = nil
}

// WaitKubeletVersion waits (up to two minutes) until the Node name
// reports kubelet version: a kubelet posts its status when it starts and
// then every few seconds.
func (c *Cluster) WaitKubeletVersion(t testing.TB, name, version string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := ""
	for {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			got = n.Status.NodeInfo.KubeletVersion
			if got == version {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Node %s reports kubelet %q, want %s (%v)", name, got, version, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// NodeKubeconfig is a kubelet's kubeconfig for the Node name, its client
// certificate (system:node:NAME in system:nodes, valid for a day) and the
// CA embedded: the credentials a kubelet has once it has joined.
func (c *Cluster) NodeKubeconfig(name string) ([]byte, error) {
	stem := "node-" + name
	if err := c.pki.issue(stem, pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}, clientAuth, nil, nil); err != nil {
		return nil, err
	}
	var data [3][]byte
	for i, f := range []string{"ca.crt", stem + ".crt", stem + ".key"} {
		b, err := os.ReadFile(c.pki.path(f))
		if err != nil {
			return nil, err
		}
		data[i] = b
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default-cluster"] = &clientcmdapi.Cluster{Server: c.NodeServer, CertificateAuthorityData: data[0]}
	cfg.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{ClientCertificateData: data[1], ClientKeyData: data[2]}
	cfg.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	cfg.CurrentContext = "default-context"
	return clientcmd.Write(*cfg)
}

// writeKubeconfig writes a kubeconfig with one cluster, user and context.
func writeKubeconfig(path, name, server, ca, cert, key string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: ca}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	cfg.CurrentContext = name
	return clientcmd.WriteToFile(*cfg, path)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// BootstrapTokens counts the cluster's bootstrap token Secrets.
func (c *Cluster) BootstrapTokens(t testing.TB) int {
	t.Helper()
	list, err := c.Client.CoreV1().Secrets(metav1.NamespaceSystem).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range list.Items {
		if s.Type == corev1.SecretTypeBootstrapToken {
			n++
		}
	}
	return n
}

// StartCRI runs crifake (upstream's fake container runtime on a loopback
// TCP port, a runtime that is not ready) for the duration of the test
// and returns its endpoint, tcp://127.0.0.1:PORT.
func StartCRI(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(Binary(t, "crifake"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start crifake: %v", err)
	}
	t.Cleanup(func() {
		stdin.Close() // crifake stops when its input closes
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("crifake: %v: %s", err, stderr.String())
	}
	return "tcp://" + strings.TrimSpace(line)
}

// UserKubeconfig writes a kubeconfig for user (a client certificate with
// that common name and no group) and returns its path: a user with only
// the rights a test binds to it.
func (c *Cluster) UserKubeconfig(t testing.TB, user string) string {
	t.Helper()
	stem := "user-" + user
	if err := c.pki.issue(stem, pkix.Name{CommonName: user}, clientAuth, nil, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(c.Dir, stem+".kubeconfig")
	if err := writeKubeconfig(path, user, c.Server, c.pki.path("ca.crt"), c.pki.path(stem+".crt"), c.pki.path(stem+".key")); err != nil {
		t.Fatal(err)
	}
	return path
}
