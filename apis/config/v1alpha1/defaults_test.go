package v1alpha1

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestSetDefaultsNode(t *testing.T) {
	n := &Node{Spec: NodeSpec{
		Credentials: CredentialsSpec{Hostname: "10.0.0.5:2222"},
		Wins:        &WinsSpec{SourceURL: "wins.exe"},
	}}
	SetDefaults_Node(n)
	c := n.Spec.Credentials
	if n.Name != "10.0.0.5" {
		t.Errorf("name = %q, want the host part of the hostname", n.Name)
	}
	if c.Hostname != "10.0.0.5:2222" {
		t.Errorf("hostname changed to %q", c.Hostname)
	}
	// Left for ~/.ssh/config to fill when connecting.
	if c.KnownHostsFile != "" || c.HostKeyPolicy != "" {
		t.Errorf("knownHostsFile %q and hostKeyPolicy %q were defaulted, want them empty", c.KnownHostsFile, c.HostKeyPolicy)
	}
	if e := n.Spec.Setup.EnableRDP; e == nil || !*e {
		t.Errorf("enableRDP = %v, want true", e)
	}
	if n.Spec.Wins.Destination != DefaultWinsDestination || n.Spec.Wins.Version != "" {
		t.Errorf("wins destination = %q, version %q", n.Spec.Wins.Destination, n.Spec.Wins.Version)
	}
	// release:wins takes the last release with the named-pipe bridge.
	r := &Node{Spec: NodeSpec{Wins: &WinsSpec{SourceURL: "Release:Wins"}}}
	SetDefaults_Node(r)
	if r.Spec.Wins.Version != DefaultWinsRelease {
		t.Errorf("release:wins version = %q, want %s", r.Spec.Wins.Version, DefaultWinsRelease)
	}
}

func TestSetDefaultsKeepsUserValues(t *testing.T) {
	off := false
	n := &Node{Spec: NodeSpec{
		Credentials: CredentialsSpec{Hostname: "h", KnownHostsFile: "kh", HostKeyPolicy: HostKeyPolicyStrict},
		Setup:       SetupSpec{EnableRDP: &off},
	}}
	n.Name = "mine"
	SetDefaults_Node(n)
	if n.Name != "mine" || n.Spec.Credentials.KnownHostsFile != "kh" ||
		n.Spec.Credentials.HostKeyPolicy != HostKeyPolicyStrict || *n.Spec.Setup.EnableRDP || n.Spec.Wins != nil {
		t.Errorf("defaults overrode user values: %+v", n)
	}
}

func TestSchemeDefaultsNodeList(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	l := &NodeList{Items: []Node{{Spec: NodeSpec{Credentials: CredentialsSpec{Hostname: "a"}}}}}
	s.Default(l)
	if e := l.Items[0].Spec.Setup.EnableRDP; e == nil || !*e {
		t.Errorf("scheme defaulting did not run: %+v", l.Items[0])
	}
	gvks, _, err := s.ObjectKinds(&Node{})
	if err != nil || len(gvks) != 1 || gvks[0] != SchemeGroupVersion.WithKind(KindNode) {
		t.Errorf("ObjectKinds(Node) = %v, %v", gvks, err)
	}
	c := l.DeepCopy()
	c.Items[0].Spec.Credentials.Hostname = "b"
	if l.Items[0].Spec.Credentials.Hostname != "a" {
		t.Error("DeepCopy shares memory")
	}
}

func TestHostPort(t *testing.T) {
	tests := []struct {
		in   string
		host string
		port int
	}{
		{"10.0.0.5:22", "10.0.0.5", 22},
		{"10.0.0.5", "10.0.0.5", 22},
		{"win:2222", "win", 2222},
		{"winworker", "winworker", 22},
		{"[fe80::1]:2200", "fe80::1", 2200},
		{"[fe80::1]", "fe80::1", 22},
		{"fe80::1", "fe80::1", 22},
		{"host:ssh", "host", 0},
	}
	for _, tt := range tests {
		host, port := CredentialsSpec{Hostname: tt.in}.HostPort()
		if host != tt.host || port != tt.port {
			t.Errorf("HostPort(%q) = %q, %d; want %q, %d", tt.in, host, port, tt.host, tt.port)
		}
	}
}
