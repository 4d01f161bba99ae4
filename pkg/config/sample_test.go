package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSampleWith checks what the flags of `swdt config init` make of the
// sample: the values set, the binaries kept, and every result valid.
func TestSampleWith(t *testing.T) {
	tests := []struct {
		name         string
		opts         SampleOptions
		host, user   string
		key, authKey string
		provs        string // provisioner names, comma-separated
		wins         bool
		err          string
	}{
		{name: "zero: the sample", host: "192.168.122.220:22", user: "Administrator",
			key: "~/.ssh/id_ed25519", authKey: "~/.ssh/id_ed25519.pub", provs: "containerd,kubelet", wins: true},
		{name: "credentials", opts: SampleOptions{Hostname: "127.0.0.1:2222", Username: "admin", PrivateKey: "~/.ssh/id_rsa"},
			host: "127.0.0.1:2222", user: "admin", key: "~/.ssh/id_rsa", authKey: "~/.ssh/id_rsa.pub", provs: "containerd,kubelet", wins: true},
		{name: "values that need quotes", opts: SampleOptions{Hostname: "[::1]:22", Username: "yes", PrivateKey: "keys/a, b#c"},
			host: "[::1]:22", user: "yes", key: "keys/a, b#c", authKey: "keys/a, b#c.pub", provs: "containerd,kubelet", wins: true},
		{name: "only kubelet", opts: SampleOptions{Hostname: "10.0.0.5", Only: []string{"kubelet"}},
			host: "10.0.0.5", user: "Administrator", key: "~/.ssh/id_ed25519", authKey: "~/.ssh/id_ed25519.pub", provs: "kubelet"},
		{name: "only kubelet and wins", opts: SampleOptions{Only: []string{"wins", "kubelet"}},
			host: "192.168.122.220:22", user: "Administrator", key: "~/.ssh/id_ed25519", authKey: "~/.ssh/id_ed25519.pub", provs: "kubelet", wins: true},
		{name: "only containerd", opts: SampleOptions{Only: []string{"containerd"}},
			host: "192.168.122.220:22", user: "Administrator", key: "~/.ssh/id_ed25519", authKey: "~/.ssh/id_ed25519.pub", provs: "containerd"},
		{name: "only wins", opts: SampleOptions{Only: []string{"wins"}},
			host: "192.168.122.220:22", user: "Administrator", key: "~/.ssh/id_ed25519", authKey: "~/.ssh/id_ed25519.pub", wins: true},
		{name: "unknown name", opts: SampleOptions{Only: []string{"kube-proxy"}}, err: `the sample has no "kube-proxy": choose from containerd, kubelet, wins`},
		{name: "invalid hostname", opts: SampleOptions{Hostname: "a b"}, err: "spec.credentials.hostname: Invalid value"},
		{name: "control character", opts: SampleOptions{Username: "a\nb"}, err: "holds a control character"},
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := SampleWith(tt.opts)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.opts.Hostname == "" && tt.opts.Username == "" && tt.opts.PrivateKey == "" && tt.opts.Only == nil && string(out) != string(Sample) {
				t.Error("the zero options changed the sample")
			}
			if !strings.HasPrefix(string(out), "# yaml-language-server: $schema=") {
				t.Error("the modeline is gone")
			}
			res, problems := parse("node.yaml", "/home/u", out, 0o600, Options{})
			if len(problems) > 0 {
				t.Fatalf("invalid: %v\n%s", problems, out)
			}
			n := res.Nodes[0]
			c := n.Spec.Credentials
			if c.Hostname != tt.host || c.Username != tt.user {
				t.Errorf("hostname %q, username %q; want %q, %q", c.Hostname, c.Username, tt.host, tt.user)
			}
			// Local paths are resolved: ~ against the home directory, others
			// against the file's.
			resolved := func(p string) string {
				if rest, ok := strings.CutPrefix(p, "~/"); ok {
					return filepath.Join(home, rest)
				}
				return filepath.Join("/home/u", p)
			}
			if c.PrivateKey != resolved(tt.key) || len(n.Spec.Setup.AuthorizedKeys) != 1 || n.Spec.Setup.AuthorizedKeys[0] != resolved(tt.authKey) {
				t.Errorf("privateKey %q, authorizedKeys %q; want %q, [%q]", c.PrivateKey, n.Spec.Setup.AuthorizedKeys, tt.key, tt.authKey)
			}
			var names []string
			for _, p := range n.Spec.Kubernetes.Provisioners {
				names = append(names, p.Name)
				// The inner loop's swdt kubernetes restarts only what changed.
				if p.Overwrite {
					t.Errorf("provisioner %s has overwrite: true", p.Name)
				}
			}
			if got := strings.Join(names, ","); got != tt.provs {
				t.Errorf("provisioners %q, want %q", got, tt.provs)
			}
			if got := n.Spec.Wins != nil; got != tt.wins {
				t.Errorf("wins %v, want %v", got, tt.wins)
			}
		})
	}
}
