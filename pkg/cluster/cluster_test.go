package cluster

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/version"
)

func TestCheckSkew(t *testing.T) {
	for _, tc := range []struct {
		kubelet, server, want string
	}{
		{"v1.37.2", "v1.37.2", ""},
		{"v1.37.0", "v1.37.9", ""},
		{"v1.34.1", "v1.37.2", ""},
		{"v1.38.0", "v1.37.2", "newer than the API server"},
		{"v1.33.9", "v1.37.2", "more than three minor versions older"},
		{"v2.0.0", "v1.37.2", "major version"},
	} {
		t.Run(tc.kubelet+"/"+tc.server, func(t *testing.T) {
			err := CheckSkew(version.MustParseGeneric(tc.kubelet), version.MustParseGeneric(tc.server))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestConnectErrors(t *testing.T) {
	for _, tc := range []struct {
		name, kubeconfig, context, want string
	}{
		{"missing file", "testdata/none.kubeconfig", "", "read kubeconfig testdata/none.kubeconfig"},
		{"unknown context", "testdata/one.kubeconfig", "other", `has no context "other" (contexts: kind-dev)`},
		{"no CA", "testdata/noca.kubeconfig", "", "has no certificate-authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Connect(tc.kubeconfig, tc.context)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	c, err := Connect("testdata/one.kubeconfig", "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Server != "https://127.0.0.1:6443" || c.Context != "kind-dev" || !strings.Contains(string(c.CAData), "BEGIN CERTIFICATE") {
		t.Errorf("cluster = %+v", c)
	}
}

func TestBootstrapKubeconfigAndServerOf(t *testing.T) {
	c, err := Connect("testdata/one.kubeconfig", "")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.BootstrapKubeconfig(Token{ID: "abcdef", Value: "abcdef.0123456789abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "token: abcdef.0123456789abcdef") || !strings.Contains(string(raw), "certificate-authority-data:") {
		t.Errorf("bootstrap kubeconfig:\n%s", raw)
	}
	server, err := ServerOf(raw)
	if err != nil || server != c.Server {
		t.Errorf("ServerOf = %q, %v; want %q", server, err, c.Server)
	}
	if _, err := ServerOf([]byte("apiVersion: v1\nkind: Config\n")); err == nil {
		t.Error("a kubeconfig without a context has a server")
	}
}
