package kubelet

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/certificate/csr"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/yaml"
)

// KubeletBinary returns the bytes of a stand-in kubelet.exe that reports
// version (for example v1.37.2) when simnode runs it as a service.
func KubeletBinary(version string) []byte {
	return []byte("MZ simnode kubelet stand-in\x00" + machine.MarkerKubelet + version + ";\x00")
}

// The simulated kubelet's timings: how often it renews its Lease and
// posts its status, and how long it waits between failed attempts.
const (
	kubeletLeaseEvery  = time.Second
	kubeletStatusEvery = 5 * time.Second
	kubeletRetry       = time.Second
	kubeletNotReady    = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
)

// Daemon plays kubelet.exe for the machine (machine.Daemon): a service
// process whose binary holds machine.MarkerKubelet.
type Daemon struct {
	// ClockOffset is how far the node's clock runs ahead of the host's
	// (negative: behind): the kubelet's times (Lease renewals, status
	// heartbeats) are the node's, as a real kubelet's are.
	ClockOffset time.Duration
	// Exec, when set, makes the kubelet run the HostProcess pods bound to
	// its Node and serve exec into them on its port (pods.go); without it
	// the kubelet runs no pods and serves no port.
	Exec HostExec
}

// Start validates the kubelet's configuration, as kubelet.exe does before
// anything else, and returns the simulated kubelet of the process.
func (d Daemon) Start(p machine.DaemonStart) (run func(ctx context.Context), exit string) {
	if !p.Resume {
		if msg := configError(p.Args, p.ReadFile); msg != "" {
			klog(p.Stderr, 'E', p.PID, "run.go:72", fmt.Sprintf("\"command failed\" err=%q", msg))
			return nil, msg
		}
	}
	f, err := p.Image()
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	v, err := kubeletVersion(f)
	if err != nil {
		return nil, ""
	}
	k := &simKubelet{n: p.System, log: p.Log, stderr: p.Stderr, service: p.Service, pid: p.PID, version: v, flags: parseKubeletFlags(p.Args), clock: d.ClockOffset, exec: d.Exec}
	klog(k.stderr, 'I', k.pid, "server.go:530", fmt.Sprintf("\"Kubelet version\" kubeletVersion=%q", v))
	return k.run, ""
}

// klog writes a line as kubelet.exe logs it to its stderr (klog's text
// format), to w; nil is a service's stderr, which goes nowhere.
func klog(w io.Writer, severity byte, pid int, source, msg string) {
	if w == nil {
		return
	}
	fmt.Fprintf(w, "%c%s %7d %s] %s\n", severity, time.Now().UTC().Format("0102 15:04:05.000000"), pid, source, msg)
}

// kubeletVersion reads the version after MarkerKubelet in a binary.
func kubeletVersion(f io.Reader) (string, error) {
	r := bufio.NewReaderSize(f, 256*1024)
	marker := []byte(machine.MarkerKubelet)
	matched := 0
	for {
		b, err := r.ReadByte()
		if err == io.EOF {
			return "", errors.New("no kubelet version marker")
		}
		if err != nil {
			return "", err
		}
		switch {
		case b == marker[matched]:
			matched++
		case b == marker[0]:
			matched = 1
		default:
			matched = 0
		}
		if matched == len(marker) {
			v, err := r.ReadString(';')
			if err != nil || len(v) > 64 {
				return "", errors.New("unterminated kubelet version marker")
			}
			return strings.TrimSuffix(v, ";"), nil
		}
	}
}

// kubeletFlags are the kubelet.exe flags the simulation honours.
type kubeletFlags struct {
	bootstrapKubeconfig, kubeconfig, config, hostname, labels string
	// cgroupsPerQOS and enforceNodeAllocatable are nil when no flag
	// sets them.
	cgroupsPerQOS          *bool
	enforceNodeAllocatable *[]string
}

func parseKubeletFlags(args []string) kubeletFlags {
	var f kubeletFlags
	for _, a := range args {
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "bootstrap-kubeconfig":
			f.bootstrapKubeconfig = value
		case "kubeconfig":
			f.kubeconfig = value
		case "config":
			f.config = value
		case "hostname-override":
			f.hostname = value
		case "node-labels":
			f.labels = value
		case "cgroups-per-qos":
			b := value != "false"
			f.cgroupsPerQOS = &b
		case "enforce-node-allocatable":
			list := []string{}
			for v := range strings.SplitSeq(strings.Trim(value, `"`), ",") {
				if v != "" {
					list = append(list, v)
				}
			}
			f.enforceNodeAllocatable = &list
		}
	}
	return f
}

// configError is the error kubelet.exe exits with before it
// does anything else, as the real one validates its flags and
// configuration file first, or "". Modelled: cgroupsPerQOS false (what a
// Windows node needs) while enforceNodeAllocatable holds pods, its
// default when neither the file nor a flag sets it (the file cannot set
// it empty: an empty list is omitted and defaulted). Flags win over the
// file. readFile reads the machine's files.
func configError(args []string, readFile func(p string) ([]byte, error)) string {
	f := parseKubeletFlags(args)
	var kc kubeletv1beta1.KubeletConfiguration
	if f.config != "" {
		raw, err := readFile(f.config)
		if err != nil {
			return fmt.Sprintf("failed to load kubelet config file, path: %s: %v", f.config, err)
		}
		if err := yaml.Unmarshal(raw, &kc); err != nil {
			return fmt.Sprintf("failed to load kubelet config file, path: %s: %v", f.config, err)
		}
	}
	perQOS := kc.CgroupsPerQOS == nil || *kc.CgroupsPerQOS
	if f.cgroupsPerQOS != nil {
		perQOS = *f.cgroupsPerQOS
	}
	enforce := kc.EnforceNodeAllocatable
	if len(enforce) == 0 {
		enforce = []string{"pods"}
	}
	if f.enforceNodeAllocatable != nil {
		enforce = *f.enforceNodeAllocatable
	}
	if !perQOS && slices.Contains(enforce, "pods") {
		return `failed to validate kubelet configuration, error: invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods" contained in enforceNodeAllocatable (--enforce-node-allocatable)`
	}
	return ""
}

// simKubelet plays kubelet.exe against a real API server: TLS bootstrap
// with the bootstrap kubeconfig (a node-client CSR the controller manager
// approves), the client kubeconfig written where --kubeconfig says, the
// Node registered with its version, labels and taints, its status posted
// (NotReady: no network plugin, as a fresh Windows node without a CNI)
// and its Lease renewed, for as long as its service process lives.
type simKubelet struct {
	// n is the machine as LocalSystem, the service's account.
	n       *machine.Node
	log     *slog.Logger
	stderr  io.Writer // the process's stderr (nil: nowhere)
	service string
	pid     int
	version string
	flags   kubeletFlags
	name    string
	// clock is the node clock's offset from the host's.
	clock time.Duration
	// exec runs a command in a HostProcess pod (nil: no pods); pods is
	// the pod runner once the kubelet has a client.
	exec HostExec
	pods *podHost
}

// now is the node's time.
func (k *simKubelet) now() time.Time { return time.Now().Add(k.clock) }

// alive reports whether the kubelet's process still runs.
func (k *simKubelet) alive() bool {
	return k.n.ProcessRuns(k.service, k.pid)
}

// logf logs an error of the kubelet, infof what it did: to the machine's
// log and, as kubelet.exe does, to its stderr.
func (k *simKubelet) logf(format string, args ...any) { k.logAs('E', format, args...) }

func (k *simKubelet) infof(format string, args ...any) { k.logAs('I', format, args...) }

func (k *simKubelet) logAs(severity byte, format string, args ...any) {
	k.log.Info(fmt.Sprintf("kubelet (pid %d): "+format, append([]any{k.pid}, args...)...))
	klog(k.stderr, severity, k.pid, "kubelet.go:1", fmt.Sprintf(format, args...))
}

func (k *simKubelet) run(ctx context.Context) {
	var client kubernetes.Interface
	for client == nil {
		if !k.wait(ctx, 0) {
			return
		}
		c, err := k.connect(ctx)
		if err != nil {
			k.logf("%v", err)
			if !k.wait(ctx, kubeletRetry) {
				return
			}
			continue
		}
		client = c
	}
	if k.exec != nil {
		h, err := k.startPods(ctx, k.exec)
		if err != nil {
			k.logf("%v", err)
			return
		}
		k.pods = h
		defer h.close()
	}
	var node *corev1.Node
	lastStatus := time.Time{}
	for k.wait(ctx, kubeletLeaseEvery) {
		if node == nil {
			n, err := k.register(ctx, client)
			if err != nil {
				k.logf("register node: %v", err)
				continue
			}
			node = n
		}
		if time.Since(lastStatus) >= kubeletStatusEvery {
			if err := k.postStatus(ctx, client); err != nil {
				k.logf("post status: %v", err)
				continue
			}
			lastStatus = time.Now()
		}
		if err := k.renewLease(ctx, client, node); err != nil {
			k.logf("renew lease: %v", err)
		}
		if k.pods != nil {
			if err := k.pods.sync(ctx, client); err != nil {
				k.logf("sync pods: %v", err)
			}
		}
	}
}

// wait waits d, then reports whether the kubelet should go on.
func (k *simKubelet) wait(ctx context.Context, d time.Duration) bool {
	if d > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(d):
		}
	}
	return ctx.Err() == nil && k.alive()
}

func (k *simKubelet) readFile(p string) ([]byte, error) { return k.n.ReadFile(p) }

// connect returns a client with the node's own credentials, doing the
// TLS bootstrap first when --kubeconfig does not exist yet.
func (k *simKubelet) connect(ctx context.Context) (kubernetes.Interface, error) {
	k.name = strings.ToLower(k.flags.hostname)
	if k.name == "" {
		k.name = strings.ToLower(k.n.Hostname())
	}
	if k.flags.kubeconfig == "" {
		return nil, errors.New("no --kubeconfig: the simulated kubelet runs only joined (standalone mode is not modelled)")
	}
	if raw, err := k.readFile(k.flags.kubeconfig); err == nil {
		return clientFrom(raw)
	}
	if k.flags.bootstrapKubeconfig == "" {
		return nil, fmt.Errorf("%s does not exist and there is no --bootstrap-kubeconfig", k.flags.kubeconfig)
	}
	raw, err := k.readFile(k.flags.bootstrapKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("read the bootstrap kubeconfig: %w", err)
	}
	boot, err := clientcmd.Load(raw)
	if err != nil {
		return nil, fmt.Errorf("parse the bootstrap kubeconfig: %w", err)
	}
	bootCfg, err := clientcmd.NewDefaultClientConfig(*boot, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("bootstrap kubeconfig: %w", err)
	}
	bootClient, err := kubernetes.NewForConfig(bootCfg)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject: pkix.Name{CommonName: "system:node:" + k.name, Organization: []string{"system:nodes"}},
	}, key)
	if err != nil {
		return nil, err
	}
	csrPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	reqName, reqUID, err := csr.RequestCertificate(bootClient, csrPEM, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
	if err != nil {
		return nil, fmt.Errorf("TLS bootstrap: post the CSR: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	certPEM, err := csr.WaitForCertificate(wctx, bootClient, reqName, reqUID)
	if err != nil {
		return nil, fmt.Errorf("TLS bootstrap: CSR %s was not approved and signed: %w", reqName, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	cluster := boot.Clusters[boot.Contexts[boot.CurrentContext].Cluster]
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default-cluster"] = cluster
	cfg.AuthInfos["default-auth"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.Contexts["default-context"] = &clientcmdapi.Context{Cluster: "default-cluster", AuthInfo: "default-auth"}
	cfg.CurrentContext = "default-context"
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	if err := k.n.WriteFile(k.flags.kubeconfig, out); err != nil {
		return nil, fmt.Errorf("write %s: %w", k.flags.kubeconfig, err)
	}
	k.infof("TLS bootstrap done: wrote %s", k.flags.kubeconfig)
	return clientFrom(out)
}

func clientFrom(kubeconfig []byte) (kubernetes.Interface, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// register creates the Node, or takes over an existing one of its name.
func (k *simKubelet) register(ctx context.Context, client kubernetes.Interface) (*corev1.Node, error) {
	n, err := client.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{})
	if err == nil {
		return n, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	labels := map[string]string{
		corev1.LabelOSStable:   "windows",
		corev1.LabelArchStable: "amd64",
		corev1.LabelHostname:   k.name,
	}
	for _, kv := range strings.Split(k.flags.labels, ",") {
		if key, value, ok := strings.Cut(kv, "="); ok {
			labels[key] = value
		}
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.name, Labels: labels}}
	if k.flags.config != "" {
		if raw, err := k.readFile(k.flags.config); err == nil {
			var kc kubeletv1beta1.KubeletConfiguration
			if err := yaml.Unmarshal(raw, &kc); err != nil {
				return nil, fmt.Errorf("parse %s: %w", k.flags.config, err)
			}
			node.Spec.Taints = kc.RegisterWithTaints
		}
	}
	n, err = client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	k.infof("Successfully registered node %s", k.name)
	return n, nil
}

// postStatus reports the node's info, addresses, capacity and conditions.
func (k *simKubelet) postStatus(ctx context.Context, client kubernetes.Interface) error {
	n, err := client.CoreV1().Nodes().Get(ctx, k.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.NewTime(k.now())
	n.Status.NodeInfo = corev1.NodeSystemInfo{
		KubeletVersion:          k.version,
		OperatingSystem:         "windows",
		Architecture:            "amd64",
		OSImage:                 "Windows Server 2022 Datacenter",
		KernelVersion:           "10.0.20348.2700",
		ContainerRuntimeVersion: "containerd://simnode",
		MachineID:               k.name,
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: k.name}, {Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}
	if k.pods != nil {
		n.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(k.pods.port)
	}
	n.Status.Capacity = corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	n.Status.Allocatable = n.Status.Capacity
	// As a real kubelet, it posts its pressure conditions (healthy: False)
	// besides Ready.
	conds := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: kubeletNotReady},
	}
	for i := range conds {
		conds[i].LastHeartbeatTime, conds[i].LastTransitionTime = now, now
		for _, c := range n.Status.Conditions {
			if c.Type == conds[i].Type && c.Status == conds[i].Status {
				conds[i].LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	n.Status.Conditions = conds
	_, err = client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

// renewLease creates or renews the node's Lease in kube-node-lease.
func (k *simKubelet) renewLease(ctx context.Context, client kubernetes.Interface, node *corev1.Node) error {
	leases := client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(k.now())
	l, err := leases.Get(ctx, k.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		duration := int32(40)
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: k.name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &k.name, LeaseDurationSeconds: &duration, RenewTime: &now},
		}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	l.Spec.RenewTime = &now
	_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	return err
}
