package clustertest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// On separate machines the laptop reaches the API server through its own
// loopback (a kind-style kubeconfig); the node reaches it at the control
// plane's address, which the serving certificate names, and its own
// loopback has no API server; cluster-info names the node's endpoint and
// anonymous users may read it.
func TestControlPlaneSeparateMachines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c := Start(t, Separate(), WithClusterInfo())
	u, err := url.Parse(c.Server)
	if err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("the laptop's server is %q, want one on its loopback", c.Server)
	}
	if _, err := c.Client.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the laptop cannot reach the API server at %s: %v", c.Server, err)
	}
	ca, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	node, err := url.Parse(c.NodeServer)
	if err != nil || node.Hostname() != c.Net.CPAddr.String() {
		t.Fatalf("NodeServer = %q, want the control plane's address %s", c.NodeServer, c.Net.CPAddr)
	}

	for _, tc := range []struct {
		name, addr string
		refused    bool
	}{
		{"the control plane's address", node.Host, false},
		{"the node's own loopback at the laptop's port", u.Host, true},
		{"the node's own loopback at 6443", "127.0.0.1:6443", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := c.Net.DialFrom(c.Net.Node, tc.addr, 10*time.Second)
			if tc.refused {
				if !errors.Is(err, syscall.ECONNREFUSED) {
					t.Fatalf("dial %s from the node: %v, want connection refused", tc.addr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("dial %s from the node: %v", tc.addr, err)
			}
			defer conn.Close()
			host, _, _ := net.SplitHostPort(tc.addr)
			tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
			if err := tc.Handshake(); err != nil {
				t.Fatalf("TLS with %s from the node: %v", host, err)
			}
		})
	}

	anon, err := kubernetes.NewForConfig(&rest.Config{Host: c.Server, TLSClientConfig: rest.TLSClientConfig{CAData: ca}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cm, err := anon.CoreV1().ConfigMaps("kube-public").Get(ctx, "cluster-info", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("anonymous get of kube-public/cluster-info: %v", err)
	}
	cfg, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil || cfg.Clusters[""] == nil || cfg.Clusters[""].Server != c.NodeServer || !strings.Contains(string(cfg.Clusters[""].CertificateAuthorityData), "BEGIN CERTIFICATE") {
		t.Fatalf("cluster-info's kubeconfig (%v):\n%s", err, cm.Data["kubeconfig"])
	}
}
