package join

import (
	"errors"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/cluster"
	"sigs.k8s.io/swdt/pkg/ops"
)

func TestProbeRefusal(t *testing.T) {
	kubeconfig := cluster.NodeEndpoint{Server: "https://127.0.0.1:40123", Source: cluster.EndpointFromKubeconfig}
	lan := cluster.NodeEndpoint{Server: "https://192.168.122.1:6443", Source: cluster.EndpointFromOverride}
	opErr := func(k ops.Kind) error { return &ops.Error{Op: ops.APIServerProbe.Name, Kind: k, Message: "m"} }
	for _, tc := range []struct {
		name     string
		ep       cluster.NodeEndpoint
		err      error
		want     []string
		loopback bool
	}{
		{"refused on the loopback", kubeconfig, opErr(ops.KindConnectionRefused),
			[]string{"at https://127.0.0.1:40123 (the kubeconfig's server)", "connection refused", "networking.apiServerAddress", "spec.kubernetes.join.apiServerEndpoint"}, true},
		{"timeout", lan, opErr(ops.KindTimeout), []string{"no answer in time", "networking.apiServerAddress"}, false},
		{"unreachable", lan, opErr(ops.KindUnreachable), []string{"unreachable"}, false},
		{"certificate name", lan, opErr(ops.KindCertificateName),
			[]string{"certificate is not valid for 192.168.122.1", "certSANs", "spec.kubernetes.join.apiServerEndpoint"}, false},
		{"unknown authority", lan, opErr(ops.KindUnknownAuthority), []string{"not signed by the cluster's CA"}, false},
		{"localhost", cluster.NodeEndpoint{Server: "https://localhost:6443", Source: cluster.EndpointFromClusterInfo}, opErr(ops.KindConnectionRefused),
			[]string{"(kube-public/cluster-info)"}, true},
		{"the op itself failed", lan, errors.New("ssh: connection lost"), []string{"ssh: connection lost"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := probeRefusal(tc.ep, tc.err)
			msg := err.Error()
			for _, w := range append(tc.want, tc.ep.Server, "nothing was changed") {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not say %q:\n%s", w, msg)
				}
			}
			if got := strings.Contains(msg, "the node's own loopback"); got != tc.loopback {
				t.Errorf("names the node's own loopback: %v, want %v:\n%s", got, tc.loopback, msg)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the op's error is not wrapped: %v", err)
			}
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true, "LOCALHOST": true, "kind.localhost": true,
		"192.168.122.1": false, "kind-control-plane": false, "fd00::1": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", host, got, want)
		}
	}
}
