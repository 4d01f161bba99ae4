package v1alpha1

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// vmNode returns a defaulted, valid node whose address comes from a
// libvirt VM.
func vmNode(mutate func(n *Node)) *Node {
	n := &Node{Spec: NodeSpec{VM: &VMSpec{Provider: VMProviderLibvirt, Name: "win2022"}}}
	mutate(n)
	SetDefaults_Node(n)
	return n
}

func TestValidateVM(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(n *Node)
		// want lists "type field" of every expected error, in order.
		want []string
	}{
		{name: "libvirt without hostname", mutate: func(*Node) {}},
		{name: "libvirt over ssh", mutate: func(n *Node) { n.Spec.VM.Libvirt = &LibvirtSpec{URI: "qemu+ssh://dev@kvm.example.com:2222/system"} }},
		{name: "libvirt session with socket", mutate: func(n *Node) {
			n.Spec.VM.Libvirt = &LibvirtSpec{URI: "test+unix:///default?socket=/tmp/libvirt-sock"}
		}},
		{name: "hyperv local", mutate: func(n *Node) { n.Spec.VM.Provider = VMProviderHyperV }},
		{name: "hyperv hosts", mutate: func(n *Node) {
			n.Spec.VM.Provider = VMProviderHyperV
			SetDefaults_Node(n)
			for _, h := range []string{"hv01", "admin@hv01.example.com:22", `CORP\admin@hv01`, "[fe80::1]:22"} {
				n.Spec.VM.HyperV = &HyperVSpec{Host: h}
				if errs := ValidateNode(n); len(errs) > 0 {
					panic(h + ": " + errs.ToAggregate().Error())
				}
			}
		}},
		{name: "hostname and vm together", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "10.0.0.5" }},
		{name: "unknown provider", mutate: func(n *Node) { n.Spec.VM.Provider = "vmware" },
			want: []string{"FieldValueNotSupported spec.vm.provider"}},
		{name: "no provider", mutate: func(n *Node) { n.Spec.VM.Provider = "" },
			want: []string{"FieldValueRequired spec.vm.provider"}},
		{name: "no names at all", mutate: func(n *Node) { n.Spec.VM.Name = "" },
			want: []string{"FieldValueRequired metadata.name", "FieldValueRequired spec.vm.name"}},
		{name: "name with a newline", mutate: func(n *Node) { n.Name = "w"; n.Spec.VM.Name = "win\n2022" },
			want: []string{"FieldValueInvalid spec.vm.name"}},
		{name: "libvirt name with slash", mutate: func(n *Node) { n.Name = "w"; n.Spec.VM.Name = "a/b" },
			want: []string{"FieldValueInvalid spec.vm.name"}},
		{name: "hyperv block with libvirt", mutate: func(n *Node) { n.Spec.VM.HyperV = &HyperVSpec{Host: "hv01"} },
			want: []string{"FieldValueForbidden spec.vm.hyperv"}},
		{name: "libvirt block with hyperv", mutate: func(n *Node) {
			n.Spec.VM.Provider = VMProviderHyperV
			n.Spec.VM.Libvirt = &LibvirtSpec{URI: "qemu:///system"}
		}, want: []string{"FieldValueForbidden spec.vm.libvirt"}},
		{name: "libvirt tcp transport", mutate: func(n *Node) { n.Spec.VM.Libvirt = &LibvirtSpec{URI: "qemu+tcp://kvm/system"} },
			want: []string{"FieldValueNotSupported spec.vm.libvirt.uri"}},
		{name: "libvirt remote host without transport is tls", mutate: func(n *Node) { n.Spec.VM.Libvirt = &LibvirtSpec{URI: "qemu://kvm/system"} },
			want: []string{"FieldValueNotSupported spec.vm.libvirt.uri"}},
		{name: "libvirt ssh without host", mutate: func(n *Node) { n.Spec.VM.Libvirt = &LibvirtSpec{URI: "qemu+ssh:///system"} },
			want: []string{"FieldValueInvalid spec.vm.libvirt.uri"}},
		{name: "libvirt not a URI", mutate: func(n *Node) { n.Spec.VM.Libvirt = &LibvirtSpec{URI: "/var/run/libvirt/libvirt-sock"} },
			want: []string{"FieldValueInvalid spec.vm.libvirt.uri"}},
		{name: "hyperv host with bad port", mutate: func(n *Node) {
			n.Spec.VM.Provider = VMProviderHyperV
			n.Spec.VM.HyperV = &HyperVSpec{Host: "hv01:99999"}
		}, want: []string{"FieldValueInvalid spec.vm.hyperv.host"}},
		{name: "hyperv host with empty user", mutate: func(n *Node) {
			n.Spec.VM.Provider = VMProviderHyperV
			n.Spec.VM.HyperV = &HyperVSpec{Host: "@hv01"}
		}, want: []string{"FieldValueInvalid spec.vm.hyperv.host"}},
		{name: "zero address timeout", mutate: func(n *Node) { n.Spec.VM.AddressTimeout = &metav1.Duration{} },
			want: []string{"FieldValueInvalid spec.vm.addressTimeout"}},
		{name: "address timeout over an hour", mutate: func(n *Node) {
			n.Spec.VM.AddressTimeout = &metav1.Duration{Duration: 2 * time.Hour}
		}, want: []string{"FieldValueInvalid spec.vm.addressTimeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarize(ValidateNode(vmNode(tt.mutate)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ValidateNode() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHostnameRequiredWithoutVM(t *testing.T) {
	n := validNode()
	n.Spec.Credentials.Hostname = ""
	errs := ValidateNode(n)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.vm") {
		t.Errorf("errors = %v, want one that points at spec.vm", errs)
	}
}

func TestSetDefaultsVM(t *testing.T) {
	tests := []struct {
		name                 string
		node                 *Node
		wantNode, wantVMName string
		wantURI              string
		wantHyperV           bool
	}{
		{name: "vm name from metadata", node: &Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"},
			Spec: NodeSpec{VM: &VMSpec{Provider: VMProviderLibvirt}}},
			wantNode: "w1", wantVMName: "w1", wantURI: DefaultLibvirtURI},
		{name: "metadata from vm name", node: &Node{Spec: NodeSpec{VM: &VMSpec{Provider: VMProviderHyperV, Name: "Win 2022"}}},
			wantNode: "Win 2022", wantVMName: "Win 2022", wantHyperV: true},
		{name: "hostname names the node", node: &Node{Spec: NodeSpec{Credentials: CredentialsSpec{Hostname: "10.0.0.5"},
			VM: &VMSpec{Provider: VMProviderLibvirt, Name: "win2022", Libvirt: &LibvirtSpec{URI: "qemu:///session"}}}},
			wantNode: "10.0.0.5", wantVMName: "win2022", wantURI: "qemu:///session"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			SetDefaults_Node(tt.node)
			v := tt.node.Spec.VM
			if tt.node.Name != tt.wantNode || v.Name != tt.wantVMName {
				t.Errorf("names = %q, %q; want %q, %q", tt.node.Name, v.Name, tt.wantNode, tt.wantVMName)
			}
			if tt.wantURI != "" && (v.Libvirt == nil || v.Libvirt.URI != tt.wantURI) {
				t.Errorf("libvirt = %+v, want uri %q", v.Libvirt, tt.wantURI)
			}
			if tt.wantHyperV != (v.HyperV != nil) {
				t.Errorf("hyperv = %+v", v.HyperV)
			}
			if v.AddressTimeout == nil || v.AddressTimeout.Duration != DefaultVMAddressTimeout {
				t.Errorf("addressTimeout = %v", v.AddressTimeout)
			}
		})
	}
}
