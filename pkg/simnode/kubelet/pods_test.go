package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Only a pod on the host's network whose every container is a
// HostProcess one, by the pod's setting or its own, runs on the host.
func TestHostProcess(t *testing.T) {
	hp := func(v bool) *corev1.WindowsSecurityContextOptions {
		return &corev1.WindowsSecurityContextOptions{HostProcess: &v}
	}
	pod := func(hostNetwork bool, podLevel *corev1.WindowsSecurityContextOptions, containers ...*corev1.WindowsSecurityContextOptions) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{HostNetwork: hostNetwork, SecurityContext: &corev1.PodSecurityContext{WindowsOptions: podLevel}}}
		for _, c := range containers {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "c", SecurityContext: &corev1.SecurityContext{WindowsOptions: c}})
		}
		return p
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want bool
	}{
		{name: "pod level", pod: pod(true, hp(true), nil), want: true},
		{name: "each container", pod: pod(true, nil, hp(true), hp(true)), want: true},
		{name: "one container is not", pod: pod(true, hp(true), nil, hp(false))},
		{name: "not on the host's network", pod: pod(false, hp(true), nil)},
		{name: "an ordinary pod", pod: pod(false, nil, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := hostProcess(tc.pod); got != tc.want {
				t.Errorf("hostProcess = %v, want %v", got, tc.want)
			}
		})
	}
}
