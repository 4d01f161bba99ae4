package setup

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/words"
	"sigs.k8s.io/swdt/pkg/ops"
)

// Desired is spec.setup with its key files read.
type Desired struct {
	// EnableRDP turns Remote Desktop on (true) or off (false).
	EnableRDP bool
	// Packages are Chocolatey package ids; Chocolatey itself is installed
	// only when there are some.
	Packages []string
	// AuthorizedKeys are authorized_keys lines, one public key each.
	AuthorizedKeys []string
}

// DesiredFrom reads the public key files of spec and checks every line of
// them, so that a wrong file is reported before any node is touched.
// EnableRDP defaults to true.
func DesiredFrom(spec v1alpha1.SetupSpec) (Desired, error) {
	d := Desired{EnableRDP: spec.EnableRDP == nil || *spec.EnableRDP, Packages: spec.ChocoPackages}
	seen := map[string]bool{}
	for i, path := range spec.AuthorizedKeys {
		lines, err := readPublicKeys(path)
		if err != nil {
			return Desired{}, fmt.Errorf("spec.setup.authorizedKeys[%d]: %w", i, err)
		}
		for _, l := range lines {
			if k := keyID(l); !seen[k] {
				seen[k] = true
				d.AuthorizedKeys = append(d.AuthorizedKeys, l)
			}
		}
	}
	return d, nil
}

// readPublicKeys returns the key lines of an OpenSSH public key file,
// each checked with ssh.ParseAuthorizedKey.
func readPublicKeys(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read public key file: %w", err)
	}
	if bytes.Contains(raw, []byte("PRIVATE KEY")) {
		return nil, fmt.Errorf("%s is a private key: name the public key (usually the same path ending in .pub)", path)
	}
	var keys []string
	for i, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if _, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err != nil {
			return nil, fmt.Errorf("%s line %d is not an OpenSSH public key (expected e.g. \"ssh-ed25519 AAAA... user@host\"): %w", path, i+1, err)
		}
		keys = append(keys, line)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no public key", path)
	}
	return keys, nil
}

// keyID identifies a key by its type and bytes, ignoring options and the
// comment, so that a key already present under another comment is not
// added twice. A line that does not parse is its own identity.
func keyID(line string) string {
	pub, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return "line:" + strings.TrimSpace(line)
	}
	return string(pub.Marshal())
}

// missingKeys returns the lines of want whose keys are not in have.
func missingKeys(want, have []string) []string {
	present := map[string]bool{}
	for _, l := range have {
		present[keyID(l)] = true
	}
	var out []string
	for _, l := range want {
		if !present[keyID(l)] {
			out = append(out, l)
		}
	}
	return out
}

// plan is what a run will do, computed from the facts alone. A nil step
// is not configured and not shown.
type plan struct {
	facts       ops.SetupFactsResponse
	desired     Desired
	rdp         *Step
	choco       *Step
	packages    []Step // one per desired.Packages entry
	keys        *Step
	missingKeys []string
}

func makePlan(facts ops.SetupFactsResponse, d Desired) *plan {
	p := &plan{facts: facts, desired: d}

	want := "off"
	if d.EnableRDP {
		want = "on"
	}
	if rdpMatches(facts.RDP, d.EnableRDP) {
		p.rdp = &Step{Name: StepRDP, Result: Unchanged, Detail: "already " + describeRDP(facts.RDP)}
	} else {
		p.rdp = &Step{Name: StepRDP, Result: WouldChange, Detail: fmt.Sprintf("turn %s (now %s)", want, describeRDP(facts.RDP))}
	}

	if len(d.Packages) > 0 {
		if facts.Choco.Installed {
			p.choco = &Step{Name: StepChocolatey, Result: Unchanged, Detail: "Chocolatey " + facts.Choco.Version + " installed"}
		} else {
			detail := "install Chocolatey (the node downloads it from community.chocolatey.org)"
			if facts.LanguageMode != "" && facts.LanguageMode != "FullLanguage" {
				// Planned all the same: the op says what to do about it.
				detail += fmt.Sprintf("; PowerShell runs in %s mode on the node, where Chocolatey's install script cannot run: this step will fail", facts.LanguageMode)
			}
			p.choco = &Step{Name: StepChocolatey, Result: WouldChange, Detail: detail}
		}
	}
	installed := map[string]string{}
	for _, pkg := range facts.Choco.Packages {
		installed[strings.ToLower(pkg.Name)] = pkg.Version
	}
	for _, id := range d.Packages {
		if v, ok := installed[strings.ToLower(id)]; ok {
			p.packages = append(p.packages, Step{Name: stepPackagePrefix + id, Result: Unchanged, Detail: v + " installed"})
		} else {
			p.packages = append(p.packages, Step{Name: stepPackagePrefix + id, Result: WouldChange, Detail: "install"})
		}
	}

	if len(d.AuthorizedKeys) > 0 {
		ak := facts.AuthorizedKeys
		p.missingKeys = missingKeys(d.AuthorizedKeys, ak.Keys)
		var todo []string
		if len(p.missingKeys) > 0 {
			todo = append(todo, "add "+words.Count(len(p.missingKeys), "key"))
		}
		if keysNeedRewrite(ak) {
			todo = append(todo, fmt.Sprintf("rewrite the file as UTF-8 (it is %s, which sshd ignores)", ak.Encoding))
		}
		if ak.Exists && !ak.OwnerOK {
			todo = append(todo, fmt.Sprintf("move the file aside unread if an ordinary user created it, else give it to Administrators (it is owned by %s, which sshd refuses)", ak.Owner))
		}
		if !ak.ACLOK {
			todo = append(todo, "restrict the file to Administrators and SYSTEM")
		}
		if len(todo) == 0 {
			p.keys = &Step{Name: StepAuthorizedKeys, Result: Unchanged,
				Detail: fmt.Sprintf("%s present; owned by and limited to Administrators and SYSTEM", words.Count(len(d.AuthorizedKeys), "key"))}
		} else {
			p.keys = &Step{Name: StepAuthorizedKeys, Result: WouldChange, Detail: strings.Join(todo, "; ")}
		}
	}
	return p
}

// steps lists the plan in run order.
func (p *plan) steps() []Step {
	var out []Step
	for _, s := range []*Step{p.rdp, p.choco} {
		if s != nil {
			out = append(out, *s)
		}
	}
	out = append(out, p.packages...)
	if p.keys != nil {
		out = append(out, *p.keys)
	}
	return out
}

// keysNeedRewrite reports whether administrators_authorized_keys exists in
// an encoding sshd does not read as it should (UTF-16, or a byte order
// mark spoiling the first line).
func keysNeedRewrite(ak ops.AuthorizedKeysState) bool {
	return ak.Exists && ak.Encoding != "" && ak.Encoding != ops.EncodingUTF8
}

// rdpMatches reports whether RDP and both of its rules are in the wanted
// state. A rule that does not exist matches only "off".
func rdpMatches(st ops.RDPState, enable bool) bool {
	if st.Enabled != enable || len(st.FirewallRules) == 0 {
		return false
	}
	for _, r := range st.FirewallRules {
		if r.Enabled != enable || (enable && !r.Exists) {
			return false
		}
	}
	return true
}

// describeRDP says what the node reports, e.g. "on, firewall rules
// RemoteDesktop-UserMode-In-TCP, RemoteDesktop-UserMode-In-UDP enabled".
func describeRDP(st ops.RDPState) string {
	state := "off"
	if st.Enabled {
		state = "on"
	}
	var on, off, missing []string
	for _, r := range st.FirewallRules {
		switch {
		case !r.Exists:
			missing = append(missing, r.Name)
		case r.Enabled:
			on = append(on, r.Name)
		default:
			off = append(off, r.Name)
		}
	}
	parts := []string{state}
	if st.BlockedByPolicy {
		parts = []string{"off (blocked by Group Policy)"}
	}
	if len(on) > 0 {
		parts = append(parts, "firewall rules enabled: "+strings.Join(on, ", "))
	}
	if len(off) > 0 {
		parts = append(parts, "firewall rules disabled: "+strings.Join(off, ", "))
	}
	if len(missing) > 0 {
		parts = append(parts, "firewall rules missing: "+strings.Join(missing, ", "))
	}
	return strings.Join(parts, "; ")
}
