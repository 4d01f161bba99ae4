package v1alpha1

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestValidateRollout(t *testing.T) {
	one := intstr.FromInt32(1)
	neg := int64(-1)
	tests := []struct {
		name    string
		rollout RolloutSpec
		// noHostname leaves spec.credentials.hostname out.
		noHostname bool
		want       []string
	}{
		{name: "the defaults, no hostname", rollout: RolloutSpec{}, noHostname: true},
		{name: "every field", rollout: RolloutSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"example.com/pool": "canary"}},
			Provisioners:   []string{"KUBELET"},
			MaxUnavailable: &one, Timeout: &metav1.Duration{Duration: time.Minute},
			Drain: &DrainSpec{Timeout: &metav1.Duration{Duration: time.Minute}},
		}},
		{name: "a bad selector", rollout: RolloutSpec{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}},
			want: []string{"FieldValueInvalid spec.kubernetes.rollout.selector"}},
		{name: "an unknown provisioner", rollout: RolloutSpec{Provisioners: []string{"kube-proxy"}},
			want: []string{"FieldValueNotFound spec.kubernetes.rollout.provisioners[0]"}},
		{name: "maxUnavailable 0", rollout: RolloutSpec{MaxUnavailable: new(intstr.FromInt32(0))},
			want: []string{"FieldValueInvalid spec.kubernetes.rollout.maxUnavailable"}},
		{name: "maxUnavailable not a percentage", rollout: RolloutSpec{MaxUnavailable: new(intstr.FromString("half"))},
			want: []string{"FieldValueInvalid spec.kubernetes.rollout.maxUnavailable"}},
		{name: "maxUnavailable over 100%", rollout: RolloutSpec{MaxUnavailable: new(intstr.FromString("120%"))},
			want: []string{"FieldValueInvalid spec.kubernetes.rollout.maxUnavailable"}},
		{name: "timeouts not positive, negative grace", rollout: RolloutSpec{Timeout: &metav1.Duration{},
			Drain: &DrainSpec{Timeout: &metav1.Duration{Duration: -time.Second}, GracePeriodSeconds: &neg}},
			want: []string{"FieldValueInvalid spec.kubernetes.rollout.timeout", "FieldValueInvalid spec.kubernetes.rollout.drain.timeout",
				"FieldValueInvalid spec.kubernetes.rollout.drain.gracePeriodSeconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := validNode()
			n.Name = "windows-workers"
			n.Spec.Kubernetes.Provisioners = n.Spec.Kubernetes.Provisioners[:1]
			n.Spec.Kubernetes.Provisioners[0].Name = "kubelet"
			n.Spec.Wins = nil
			if tt.noHostname {
				n.Spec.Credentials.Hostname = ""
			}
			if tt.rollout.Transport == "" {
				tt.rollout.Transport = TransportSSH
			}
			n.Spec.Kubernetes.Rollout = &tt.rollout
			if got := summarize(ValidateNode(n)); !slices.Equal(got, tt.want) {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateTransport(t *testing.T) {
	tests := []struct {
		name    string
		rollout RolloutSpec
		// creds keeps spec.credentials' username.
		creds bool
		want  []string
	}{
		{name: "Kubernetes, no credentials", rollout: RolloutSpec{Transport: TransportKubernetes}},
		{name: "Kubernetes with its own image", rollout: RolloutSpec{Transport: TransportKubernetes, Image: "registry.example.com/hpc-base:v1.0.0"}},
		{name: "Kubernetes with credentials", rollout: RolloutSpec{Transport: TransportKubernetes}, creds: true,
			want: []string{"FieldValueForbidden spec.credentials"}},
		{name: "Kubernetes, an image with a space", rollout: RolloutSpec{Transport: TransportKubernetes, Image: "a b"},
			want: []string{"FieldValueInvalid spec.kubernetes.rollout.image"}},
		{name: "SSH with credentials", rollout: RolloutSpec{Transport: TransportSSH}, creds: true},
		{name: "SSH with an image", rollout: RolloutSpec{Transport: TransportSSH, Image: "registry.example.com/hpc-base:v1.0.0"}, creds: true,
			want: []string{"FieldValueForbidden spec.kubernetes.rollout.image"}},
		{name: "an unknown transport", rollout: RolloutSpec{Transport: "WinRM"},
			want: []string{"FieldValueNotSupported spec.kubernetes.rollout.transport"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := validNode()
			n.Name = "windows-workers"
			n.Spec.Kubernetes.Provisioners = n.Spec.Kubernetes.Provisioners[:1]
			n.Spec.Wins = nil
			n.Spec.Setup.AuthorizedKeys = nil
			n.Spec.Credentials = CredentialsSpec{}
			if tt.creds {
				n.Spec.Credentials.Username = "Administrator"
			}
			n.Spec.Kubernetes.Rollout = &tt.rollout
			if got := summarize(ValidateNode(n)); !slices.Equal(got, tt.want) {
				t.Errorf("errors = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDefaultTransport(t *testing.T) {
	n := &Node{Spec: NodeSpec{Kubernetes: KubernetesSpec{Rollout: &RolloutSpec{}}}}
	SetDefaults_Node(n)
	if got := n.Spec.Kubernetes.Rollout.Transport; got != TransportKubernetes {
		t.Errorf("default transport = %q, want %q", got, TransportKubernetes)
	}
}

func TestMaxUnavailable(t *testing.T) {
	for _, tt := range []struct {
		m     *intstr.IntOrString
		total int
		want  int
	}{
		{nil, 5, 1},
		{new(intstr.FromInt32(2)), 5, 2},
		{new(intstr.FromString("40%")), 5, 2},
		{new(intstr.FromString("10%")), 5, 1},
		{new(intstr.FromString("100%")), 5, 5},
	} {
		if got, err := MaxUnavailable(tt.m, tt.total); err != nil || got != tt.want {
			t.Errorf("MaxUnavailable(%v, %d) = %d, %v; want %d", tt.m, tt.total, got, err, tt.want)
		}
	}
}
