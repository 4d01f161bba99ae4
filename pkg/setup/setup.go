// Package setup is the `swdt setup` workflow: gather a node's facts in one
// op, plan against spec.setup (Remote Desktop, Chocolatey and its packages,
// administrators_authorized_keys), and apply only what differs, verifying
// each change by what the node reports back.
//
// It talks to the node only through the Node interface and reports only
// through Observer and the returned Report: it never prints and never sees
// SSH. A second run against a node in the desired state sends no op that
// changes anything.
package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/swdt/internal/words"
	"sigs.k8s.io/swdt/pkg/node"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Node is what setup needs from a node; *node.Node implements it.
type Node interface {
	SetupFacts(ctx context.Context) (ops.SetupFactsResponse, error)
	SetRDP(ctx context.Context, enable bool) (ops.RDPState, error)
	InstallChoco(ctx context.Context) (ops.ChocoState, error)
	InstallPackages(ctx context.Context, packages []string) ([]ops.ChocoPackageResult, error)
	AddAuthorizedKeys(ctx context.Context, keys []string) (ops.AuthorizedKeysState, error)
}

// Result is a step's outcome.
type Result string

// Step results. A dry run reports WouldChange instead of Changed.
const (
	Changed     Result = "changed"
	Unchanged   Result = "unchanged"
	Failed      Result = "failed"
	WouldChange Result = "would-change"
)

// Step names.
const (
	StepRDP            = "rdp"
	StepChocolatey     = "chocolatey"
	StepAuthorizedKeys = "authorized-keys"
	// stepPackagePrefix + id names one package's step.
	stepPackagePrefix = "package "
)

// Step is one thing setup ensures, with what happened to it.
type Step struct {
	// Name is rdp, chocolatey, "package <id>" or authorized-keys.
	Name string `json:"name"`
	// Result is changed, unchanged, failed or (dry run) would-change.
	Result Result `json:"result"`
	// Detail says what was found, done or went wrong.
	Detail string `json:"detail"`
	// RebootRequired is set when the change needs a reboot to take effect.
	RebootRequired bool `json:"rebootRequired,omitempty"`
}

// Report is the outcome on one node.
type Report struct {
	// Node is the node's metadata.name.
	Node string `json:"name"`
	// Facts are what the node reported before any change.
	Facts ops.SetupFactsResponse `json:"-"`
	// Steps are in the order they run; in a dry run, the plan.
	Steps []Step `json:"steps"`
	// DryRun is true when nothing was changed on purpose.
	DryRun bool `json:"-"`
}

// Failed reports whether any step failed.
func (r *Report) Failed() bool {
	for _, s := range r.Steps {
		if s.Result == Failed {
			return true
		}
	}
	return false
}

// RebootRequired lists the steps whose change needs a reboot.
func (r *Report) RebootRequired() []string {
	var names []string
	for _, s := range r.Steps {
		if s.RebootRequired {
			names = append(names, s.Name)
		}
	}
	return names
}

// Observer is told what a run is doing. Runs on several nodes call it
// concurrently; implementations must be safe for that.
type Observer interface {
	// Planned is called once with the facts and the plan (every step
	// WouldChange or Unchanged), before anything changes.
	Planned(r *Report)
	// StepDone is called when a step has been applied.
	StepDone(node string, s Step)
}

type nopObserver struct{}

func (nopObserver) Planned(*Report)       {}
func (nopObserver) StepDone(string, Step) {}

// Options tune a run.
type Options struct {
	// DryRun stops after the plan.
	DryRun bool
	// Observer receives progress; nil discards it.
	Observer Observer
}

// NotAdminError is returned when swdt's account on the node is not an
// administrator: everything setup changes is machine-wide.
type NotAdminError struct {
	// Node is the node's metadata.name; User is DOMAIN\user on the node.
	Node, User string
}

func (e *NotAdminError) Error() string {
	return fmt.Sprintf("%s is not an administrator on node %s, and setup changes machine-wide settings "+
		"(registry, firewall, Chocolatey, administrators_authorized_keys); set spec.credentials.username "+
		"to a member of the Administrators group (for example Administrator) and run swdt setup again",
		e.User, e.Node)
}

// Run brings the node to desired. The error is non-nil only when nothing
// could be done (facts could not be gathered, or the account is not an
// administrator); a step that fails is reported in the Report and the
// following steps still run, unless they depend on it.
func Run(ctx context.Context, name string, n Node, desired Desired, opts Options) (*Report, error) {
	obs := opts.Observer
	if obs == nil {
		obs = nopObserver{}
	}
	facts, err := n.SetupFacts(ctx)
	var denied *node.NotAdminError
	if errors.As(err, &denied) {
		return nil, &NotAdminError{Node: name, User: "the SSH account"}
	}
	if err != nil {
		return nil, fmt.Errorf("gather facts: %w", err)
	}
	if !facts.Node.IsAdmin {
		return nil, &NotAdminError{Node: name, User: facts.Node.Username}
	}
	p := makePlan(facts, desired)
	report := &Report{Node: name, Facts: facts, Steps: p.steps(), DryRun: opts.DryRun}
	obs.Planned(report)
	if opts.DryRun {
		return report, nil
	}
	report.Steps = report.Steps[:0]
	done := func(s Step) {
		report.Steps = append(report.Steps, s)
		obs.StepDone(name, s)
	}
	if p.rdp != nil {
		done(p.applyRDP(ctx, n))
	}
	chocoReady := true
	if p.choco != nil {
		s := p.applyChoco(ctx, n)
		chocoReady = s.Result != Failed
		done(s)
	}
	for _, s := range p.applyPackages(ctx, n, chocoReady) {
		done(s)
	}
	if p.keys != nil {
		done(p.applyKeys(ctx, n))
	}
	return report, nil
}

// opMessage is the node's own explanation of a failed op, or the error.
func opMessage(err error) string {
	var opErr *ops.Error
	if errors.As(err, &opErr) {
		return opErr.Message
	}
	return err.Error()
}

// applyRDP sets Remote Desktop and verifies the state read back.
func (p *plan) applyRDP(ctx context.Context, n Node) Step {
	s := *p.rdp
	if s.Result == Unchanged {
		return s
	}
	st, err := n.SetRDP(ctx, p.desired.EnableRDP)
	if err != nil {
		return Step{Name: StepRDP, Result: Failed, Detail: opMessage(err)}
	}
	if !rdpMatches(st, p.desired.EnableRDP) {
		return Step{Name: StepRDP, Result: Failed, Detail: "set, but the node reports " + describeRDP(st)}
	}
	return Step{Name: StepRDP, Result: Changed, Detail: "now " + describeRDP(st)}
}

// applyChoco installs Chocolatey when the plan says so.
func (p *plan) applyChoco(ctx context.Context, n Node) Step {
	s := *p.choco
	if s.Result == Unchanged {
		return s
	}
	st, err := n.InstallChoco(ctx)
	var opErr *ops.Error
	if errors.As(err, &opErr) && opErr.Kind == ops.KindRebootRequired {
		// The node must reboot before Chocolatey can be installed; the
		// message says so and that a second run completes it.
		return Step{Name: StepChocolatey, Result: Failed, Detail: opErr.Message, RebootRequired: true}
	}
	if err != nil {
		return Step{Name: StepChocolatey, Result: Failed, Detail: opMessage(err)}
	}
	if !st.Installed {
		return Step{Name: StepChocolatey, Result: Failed, Detail: "the install ran but the node reports no choco.exe"}
	}
	return Step{Name: StepChocolatey, Result: Changed, Detail: "installed Chocolatey " + st.Version}
}

// applyPackages installs the missing packages in one op, one step each.
func (p *plan) applyPackages(ctx context.Context, n Node, chocoReady bool) []Step {
	steps := make([]Step, len(p.packages))
	var missing []string
	for i, s := range p.packages {
		steps[i] = s
		if s.Result == WouldChange {
			missing = append(missing, p.desired.Packages[i])
		}
	}
	if len(missing) == 0 {
		return steps
	}
	fail := func(detail string) []Step {
		for i := range steps {
			if steps[i].Result == WouldChange {
				steps[i] = Step{Name: steps[i].Name, Result: Failed, Detail: detail}
			}
		}
		return steps
	}
	if !chocoReady {
		return fail("not installed: Chocolatey is missing (see the chocolatey step)")
	}
	results, err := n.InstallPackages(ctx, missing)
	if err != nil {
		return fail(opMessage(err))
	}
	byName := map[string]ops.ChocoPackageResult{}
	for _, r := range results {
		byName[strings.ToLower(r.Name)] = r
	}
	for i := range steps {
		if steps[i].Result != WouldChange {
			continue
		}
		id := p.desired.Packages[i]
		r, ok := byName[strings.ToLower(id)]
		if !ok {
			steps[i] = Step{Name: steps[i].Name, Result: Failed, Detail: "the node reported no result for this package"}
			continue
		}
		steps[i] = packageStep(id, r)
	}
	return steps
}

// packageStep turns choco's result for one package into a step.
func packageStep(id string, r ops.ChocoPackageResult) Step {
	name := stepPackagePrefix + id
	switch r.Result {
	case ops.PackageInstalled:
		detail := "installed"
		if r.Version != "" {
			detail += " " + r.Version
		}
		if r.RebootRequired {
			detail += fmt.Sprintf(" (choco exit code %d: reboot required)", r.ExitCode)
		}
		return Step{Name: name, Result: Changed, Detail: detail, RebootRequired: r.RebootRequired}
	case ops.PackageNotFound:
		return Step{Name: name, Result: Failed, Detail: fmt.Sprintf(
			"package %q was not found on the Chocolatey feed; check its id at https://community.chocolatey.org/packages (choco: %s)",
			id, firstLine(r.Output))}
	default:
		return Step{Name: name, Result: Failed, Detail: fmt.Sprintf("choco install failed with exit code %d: %s", r.ExitCode, lastLines(r.Output, 3))}
	}
}

// applyKeys appends the missing keys and fixes the file's owner and ACL.
// It sends every key of the node file, not only those the facts showed
// missing: a file an ordinary user created is set aside unread, and the
// new one must hold them all.
func (p *plan) applyKeys(ctx context.Context, n Node) Step {
	s := *p.keys
	if s.Result == Unchanged {
		return s
	}
	st, err := n.AddAuthorizedKeys(ctx, p.desired.AuthorizedKeys)
	if err != nil {
		return Step{Name: StepAuthorizedKeys, Result: Failed, Detail: opMessage(err)}
	}
	if still := missingKeys(p.desired.AuthorizedKeys, st.Keys); len(still) > 0 {
		return Step{Name: StepAuthorizedKeys, Result: Failed,
			Detail: fmt.Sprintf("%d key(s) still missing from %s after appending", len(still), ops.AdministratorsAuthorizedKeys)}
	}
	if !st.OwnerOK {
		return Step{Name: StepAuthorizedKeys, Result: Failed,
			Detail: fmt.Sprintf("%s is still owned by %s, not Administrators or SYSTEM: sshd will ignore it", ops.AdministratorsAuthorizedKeys, st.Owner)}
	}
	if !st.ACLOK {
		return Step{Name: StepAuthorizedKeys, Result: Failed,
			Detail: fmt.Sprintf("%s still grants access beyond Administrators and SYSTEM: sshd will ignore it", ops.AdministratorsAuthorizedKeys)}
	}
	if keysNeedRewrite(st) {
		return Step{Name: StepAuthorizedKeys, Result: Failed,
			Detail: fmt.Sprintf("%s is still encoded as %s, not UTF-8: sshd will ignore it", ops.AdministratorsAuthorizedKeys, st.Encoding)}
	}
	detail := fmt.Sprintf("added %s", words.Count(st.Added, "key"))
	if keysNeedRewrite(p.facts.AuthorizedKeys) {
		detail += fmt.Sprintf("; rewrote the file as UTF-8 (it was %s)", p.facts.AuthorizedKeys.Encoding)
	}
	if ak := p.facts.AuthorizedKeys; st.SetAside != "" {
		detail += fmt.Sprintf("; moved the file %s owned (sshd did not trust it) aside, unread, to %s: it holds only the node file's keys now", ak.Owner, st.SetAside)
	} else if ak.Exists && !ak.OwnerOK {
		detail += fmt.Sprintf("; gave the file to Administrators (it was owned by %s)", ak.Owner)
	}
	if !p.facts.AuthorizedKeys.ACLOK {
		detail += "; restricted the file to Administrators and SYSTEM"
	}
	return Step{Name: StepAuthorizedKeys, Result: Changed, Detail: detail}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}

// lastLines returns the last n non-empty lines of s on one line.
func lastLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " / ")
}
