package app

import (
	"context"
	"time"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/daytwo"
)

// joinRebootTimeout bounds the reboot a join does to finish installing
// the Containers feature: swdt reboot --wait's default.
const joinRebootTimeout = 10 * time.Minute

// joinReboot is swdt reboot --wait for one node of a join.
func joinReboot(ctx context.Context, e *env, spec *v1alpha1.Node) error {
	_, err := daytwo.Reboot(ctx, spec, e.connect, daytwo.RebootOptions{Wait: true, Timeout: joinRebootTimeout,
		Step: func(msg string) { e.ui.Step(spec.Name, "%s", msg) },
		Warn: func(msg string) { e.ui.Warn("%s", msg) }})
	return err
}
