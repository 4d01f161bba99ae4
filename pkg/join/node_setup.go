package join

import (
	"context"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
)

// The node's Windows side of a join, as sig-windows-tools' scripts set
// a node up: the Containers feature before anything is installed
// (Install-Containerd.ps1 installs it and reboots), then, once the
// services are registered, the kubelet's firewall rule (PrepareNode.ps1)
// and the services' restart actions and error control (containerd's
// --register-service).

// containers makes sure the node has the Containers feature: when it is
// off, the join installs it, reboots the node through Options.Reboot
// (swdt reboot --wait), connects again and checks that it is on. A node
// that cannot tell (no Windows PowerShell) is warned about.
func (j *joiner) containers(ctx context.Context, connect Connect, p *prepared, rep *Report) error {
	j.step("checking the Windows feature " + ops.JoinContainersFeature)
	res, err := p.n.JoinFeature(ctx, ops.JoinFeatureRequest{Install: true})
	if err != nil {
		return fmt.Errorf("the Windows feature %s: %w", ops.JoinContainersFeature, err)
	}
	if res.NotSupported != "" {
		j.opts.Observer.Warn(fmt.Sprintf("node %s: the Windows feature %s could not be checked (%s): pods need it; install it yourself (Install-WindowsFeature -Name %s, then reboot)",
			j.spec.Name, ops.JoinContainersFeature, res.NotSupported, ops.JoinContainersFeature))
		return nil
	}
	rep.Containers = res.State
	if res.State != ops.JoinFeatureInstallPending {
		return nil
	}
	if res.Installed {
		j.step("installed the Windows feature " + ops.JoinContainersFeature + "; it needs a reboot")
	}
	if j.opts.Reboot == nil {
		return fmt.Errorf("the Windows feature %s waits for a reboot, and this run cannot reboot the node: run swdt reboot --wait, then swdt join again", ops.JoinContainersFeature)
	}
	j.step("rebooting to finish the Windows feature " + ops.JoinContainersFeature + " (as swdt reboot --wait)")
	p.closeN()
	p.closeN = func() {}
	if err := j.opts.Reboot(ctx, j.spec); err != nil {
		return fmt.Errorf("reboot to finish the Windows feature %s: %w; run swdt join again once the node is back", ops.JoinContainersFeature, err)
	}
	rep.Rebooted = true
	n, closeN, err := connect(ctx, j.spec, func(msg string) { j.opts.Observer.Warn("node " + j.spec.Name + ": " + msg) })
	if err != nil {
		return fmt.Errorf("connect after the reboot: %w", err)
	}
	p.n, p.closeN = n, closeN
	if res, err = p.n.JoinFeature(ctx, ops.JoinFeatureRequest{}); err != nil {
		return fmt.Errorf("the Windows feature %s after the reboot: %w", ops.JoinContainersFeature, err)
	}
	if rep.Containers = res.State; res.State != ops.JoinFeatureInstalled {
		return fmt.Errorf("the Windows feature %s is %s after the reboot, not Installed: look at the node's Server Manager or Get-WindowsFeature %s, then run swdt join again",
			ops.JoinContainersFeature, res.State, ops.JoinContainersFeature)
	}
	return nil
}

// setup creates the join's firewall rules and gives its services their
// restart actions and ErrorControl Normal, once they are registered.
func (j *joiner) setup(ctx context.Context, p *prepared, rep *Report) error {
	req := ops.JoinSetupRequest{KubeProxy: p.kubeProxy != nil}
	for _, s := range p.resetRequest().Services {
		req.Services = append(req.Services, s.Name)
	}
	j.step("opening the kubelet's port and setting the services' restart actions")
	res, err := p.n.JoinSetup(ctx, req)
	if err != nil {
		return fmt.Errorf("set up the node's firewall and services: %w", err)
	}
	rep.FirewallRules, rep.ServicesConfigured = res.Rules, res.Services
	for _, msg := range res.NotSupported {
		j.opts.Observer.Warn("node " + j.spec.Name + ": not done on this system: " + msg)
	}
	if len(res.Rules) > 0 || len(res.Services) > 0 {
		j.step("created or enabled " + orNone(res.Rules) + "; restart actions and error control set on " + orNone(res.Services))
	}
	return nil
}

// orNone joins names, or says none.
func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
