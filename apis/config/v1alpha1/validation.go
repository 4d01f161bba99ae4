package v1alpha1

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/swdt/internal/sshname"
	"sigs.k8s.io/swdt/internal/winname"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/redact"
)

var (
	// serviceNameRE is the Service Control Manager's key name, restricted to
	// what is safe to pass around: no slashes, no spaces, at most 256 chars.
	serviceNameRE = boundedName{regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`), 256}
	// chocoIDRE is a NuGet/Chocolatey package id.
	chocoIDRE = boundedName{regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`), 100}
	// envNameRE is a portable environment variable name.
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// pipeNameRE is a named pipe name without the \\.\pipe\ prefix.
	pipeNameRE = boundedName{regexp.MustCompile(`^[A-Za-z0-9._-]+$`), 256}
	// sha256RE is a hex SHA-256 digest.
	sha256RE = regexp.MustCompile(`^[0-9A-Fa-f]{64}$`)
	// driveRE is the drive-letter root of an absolute Windows path.
	driveRE = regexp.MustCompile(`^[A-Za-z]:\\`)
)

// boundedName is a name that re matches of at most max bytes (its
// characters are ASCII). The bound is checked apart: a regular
// expression's {0,255} compiles into hundreds of states, 1.4 ms of every
// swdt start.
type boundedName struct {
	re  *regexp.Regexp
	max int
}

// MatchString reports whether s is such a name.
func (b boundedName) MatchString(s string) bool { return len(s) <= b.max && b.re.MatchString(s) }

// usernameForbidden are the characters Windows forbids in account names.
const usernameForbidden = `"/[]:;|=,+*?<>`

// ValidateNode returns every problem of a defaulted node at once. Field
// paths are rooted at the node (metadata.name, spec.credentials.hostname,
// ...). Secret values never appear in the errors.
func ValidateNode(n *Node) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateNodeName(n.Name, field.NewPath("metadata", "name"))...)
	spec := field.NewPath("spec")
	// A node with spec.vm leaves its address to the hypervisor, a rollout
	// takes each Node's from the cluster.
	errs = append(errs, validateCredentials(&n.Spec.Credentials, n.Spec.VM != nil || n.Spec.Kubernetes.Rollout != nil, spec.Child("credentials"))...)
	errs = append(errs, validateSetup(&n.Spec.Setup, spec.Child("setup"))...)
	errs = append(errs, validateKubernetes(&n.Spec.Kubernetes, spec.Child("kubernetes"))...)
	if r := n.Spec.Kubernetes.Rollout; r != nil {
		errs = append(errs, validateTransport(r, &n.Spec.Credentials, spec)...)
	}
	if n.Spec.Wins != nil {
		errs = append(errs, validateWins(n.Spec.Wins, spec.Child("wins"))...)
	}
	if n.Spec.VM != nil {
		errs = append(errs, validateVM(n.Spec.VM, spec.Child("vm"))...)
	}
	return errs
}

func validateNodeName(name string, p *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(p, "set metadata.name, spec.credentials.hostname or spec.vm.name")}
	case len(name) > 253:
		return field.ErrorList{field.TooLong(p, name, 253)}
	case hasSpaceOrControl(name):
		return field.ErrorList{field.Invalid(p, name, "must not contain whitespace or control characters")}
	}
	return nil
}

// validateCredentials checks c; hasVM says the address comes from
// elsewhere (spec.vm's hypervisor, or the cluster for a rollout), so that
// the hostname may be left out.
func validateCredentials(c *CredentialsSpec, hasVM bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Hostname != "" || !hasVM {
		errs = append(errs, validateHostname(c, p.Child("hostname"))...)
	}
	if c.Username != "" {
		errs = append(errs, validateUsername(c.Username, p.Child("username"))...)
	}
	if c.PrivateKey != "" {
		errs = append(errs, validateLocalPath(c.PrivateKey, p.Child("privateKey"))...)
	}
	if c.Password != "" && c.PasswordEnv != "" {
		// Forbidden never prints the value, so the password stays out of
		// the message.
		errs = append(errs, field.Forbidden(p.Child("password"), "set either password or passwordEnv, not both"))
	}
	if c.PasswordEnv != "" && !envNameRE.MatchString(c.PasswordEnv) {
		errs = append(errs, field.Invalid(p.Child("passwordEnv"), c.PasswordEnv,
			"must be an environment variable name: letters, digits and _, not starting with a digit"))
	}
	if c.KnownHostsFile != "" {
		errs = append(errs, validateLocalPath(c.KnownHostsFile, p.Child("knownHostsFile"))...)
	}
	switch c.HostKeyPolicy {
	case "", HostKeyPolicyStrict, HostKeyPolicyAcceptNew, HostKeyPolicyInsecure:
	default:
		errs = append(errs, field.NotSupported(p.Child("hostKeyPolicy"), c.HostKeyPolicy,
			[]HostKeyPolicy{HostKeyPolicyStrict, HostKeyPolicyAcceptNew, HostKeyPolicyInsecure}))
	}
	return errs
}

func validateHostname(c *CredentialsSpec, p *field.Path) field.ErrorList {
	h := c.Hostname
	if h == "" {
		return field.ErrorList{field.Required(p, "host[:port] or a Host alias from ~/.ssh/config (or set spec.vm to ask the hypervisor for the address)")}
	}
	if hasSpaceOrControl(h) {
		return field.ErrorList{field.Invalid(p, h, "must not contain whitespace or control characters")}
	}
	if strings.Count(h, "[") != strings.Count(h, "]") || strings.Count(h, "[") > 1 {
		return field.ErrorList{field.Invalid(p, h, "an IPv6 address must be written in one pair of brackets: [fe80::1]:22")}
	}
	host, port := c.HostPort()
	if host == "" || strings.ContainsAny(host, "[]/@") {
		return field.ErrorList{field.Invalid(p, h, "must be host[:port], [IPv6][:port] or a Host alias; put the user in username")}
	}
	if port < 1 || port > 65535 {
		return field.ErrorList{field.Invalid(p, h, "port must be a number from 1 to 65535")}
	}
	if _, ps, err := net.SplitHostPort(h); err == nil && sshname.Port(ps) != nil {
		return field.ErrorList{field.Invalid(p, h, "port must be a number from 1 to 65535")}
	}
	// As OpenSSH: a host name a shell would act on never reaches one (a
	// ProxyCommand in ~/.ssh/config substitutes it).
	if err := sshname.Host(host); err != nil {
		return field.ErrorList{field.Invalid(p, h, err.Error())}
	}
	return nil
}

func validateUsername(u string, p *field.Path) field.ErrorList {
	switch {
	case len(u) > 256:
		return field.ErrorList{field.TooLong(p, u, 256)}
	case strings.TrimSpace(u) != u || hasControl(u):
		return field.ErrorList{field.Invalid(p, u, "must not have leading or trailing spaces or control characters")}
	case strings.ContainsAny(u, usernameForbidden):
		return field.ErrorList{field.Invalid(p, u, "must not contain any of "+usernameForbidden)}
	case strings.Count(u, `\`) > 1 || strings.HasPrefix(u, `\`) || strings.HasSuffix(u, `\`):
		return field.ErrorList{field.Invalid(p, u, `must be user, DOMAIN\user or user@domain`)}
	}
	if err := sshname.User(u); err != nil {
		return field.ErrorList{field.Invalid(p, u, err.Error())}
	}
	return nil
}

func validateSetup(s *SetupSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, id := range s.ChocoPackages {
		ip := p.Child("chocoPackages").Index(i)
		switch {
		case !chocoIDRE.MatchString(id):
			errs = append(errs, field.Invalid(ip, id,
				"must be a Chocolatey package id: letters, digits, '.', '_' and '-', starting with a letter or digit"))
		case seen[strings.ToLower(id)]:
			errs = append(errs, field.Duplicate(ip, id))
		}
		seen[strings.ToLower(id)] = true
	}
	for i, k := range s.AuthorizedKeys {
		kp := p.Child("authorizedKeys").Index(i)
		if k == "" {
			errs = append(errs, field.Required(kp, "the path of a public key file"))
			continue
		}
		errs = append(errs, validateLocalPath(k, kp)...)
	}
	return errs
}

func validateKubernetes(k *KubernetesSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	destinations := map[string]bool{}
	for i := range k.Provisioners {
		pp := p.Child("provisioners").Index(i)
		pr := &k.Provisioners[i]
		errs = append(errs, validateProvisioner(pr, pp)...)
		if kind, ok := releaseKind(pr.SourceURL); ok && kind == ReleaseKubernetes && pr.Version == "" && k.Join == nil {
			errs = append(errs, field.Required(pp.Child("version"),
				"sourceURL release:kubernetes takes the binary of this Kubernetes version, for example v1.37.2 (only swdt join, with spec.kubernetes.join, defaults it to the control plane's)"))
		}
		// Service names and paths are case-insensitive on Windows.
		if n := strings.ToLower(pr.Name); n != "" {
			if names[n] {
				errs = append(errs, field.Duplicate(pp.Child("name"), pr.Name))
			}
			names[n] = true
		}
		if d := strings.ToLower(pr.Destination); d != "" {
			if destinations[d] {
				errs = append(errs, field.Duplicate(pp.Child("destination"), pr.Destination))
			}
			destinations[d] = true
		}
	}
	if k.Join != nil {
		errs = append(errs, validateJoin(k, p.Child("join"))...)
	}
	if k.Rollout != nil {
		errs = append(errs, validateRollout(k, p.Child("rollout"))...)
	}
	return errs
}

func validateProvisioner(pr *ProvisionerSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case pr.Name == "":
		errs = append(errs, field.Required(p.Child("name"), "the provisioner's name (and its Windows service's, unless service is set), for example kubelet"))
	case !serviceNameRE.MatchString(pr.Name):
		errs = append(errs, field.Invalid(p.Child("name"), pr.Name,
			"must be a Windows service name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 256 characters"))
	}
	if pr.Service != "" && !serviceNameRE.MatchString(pr.Service) {
		errs = append(errs, field.Invalid(p.Child("service"), pr.Service,
			"must be a Windows service name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 256 characters"))
	}
	if hasControl(pr.Version) {
		errs = append(errs, field.Invalid(p.Child("version"), pr.Version, "must not contain control characters"))
	}
	if kind, ok := releaseKind(pr.SourceURL); ok {
		errs = append(errs, validateRelease(pr, kind, p)...)
	} else {
		errs = append(errs, validateSourceURL(pr.SourceURL, p.Child("sourceURL"))...)
	}
	errs = append(errs, validateWindowsPath(pr.Destination, p.Child("destination"))...)
	errs = append(errs, validateSHA256(pr.SHA256, p.Child("sha256"))...)
	for i := range pr.HealthChecks {
		errs = append(errs, validateHealthCheck(&pr.HealthChecks[i], p.Child("healthCheck").Index(i))...)
	}
	if pr.Register != nil {
		errs = append(errs, validateRegistration(pr.Register, p.Child("register"))...)
	}
	if strings.EqualFold(pr.Service, NoService) {
		if pr.Register != nil {
			errs = append(errs, field.Invalid(p.Child("register"), "", "a provisioner with service None has no service to register: drop register, or name the service"))
		}
		if len(pr.HealthChecks) > 0 {
			errs = append(errs, field.Invalid(p.Child("healthCheck"), "", "a provisioner with service None starts nothing that could be checked: drop healthCheck, or name the service the binary feeds"))
		}
	}
	return errs
}

func validateRegistration(r *ServiceRegistration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, a := range r.Args {
		if hasControl(a) || strings.ContainsRune(a, 0) {
			errs = append(errs, field.Invalid(p.Child("args").Index(i), a, "must not contain control characters"))
		}
	}
	if hasControl(r.DisplayName) {
		errs = append(errs, field.Invalid(p.Child("displayName"), r.DisplayName, "must not contain control characters"))
	}
	if hasControl(r.Description) {
		errs = append(errs, field.Invalid(p.Child("description"), r.Description, "must not contain control characters"))
	}
	switch r.StartType {
	case "", "Automatic", "Manual":
	default:
		errs = append(errs, field.NotSupported(p.Child("startType"), r.StartType, []string{"Automatic", "Manual"}))
	}
	for i, d := range r.DependsOn {
		if !serviceNameRE.MatchString(d) {
			errs = append(errs, field.Invalid(p.Child("dependsOn").Index(i), d,
				"must be a Windows service name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 256 characters"))
		}
	}
	return errs
}

func validateHealthCheck(h *HealthCheck, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := 0
	if h.NamedPipe != "" {
		set++
		if !pipeNameRE.MatchString(h.NamedPipe) {
			errs = append(errs, field.Invalid(p.Child("namedPipe"), h.NamedPipe,
				`must be a pipe name without the \\.\pipe\ prefix: letters, digits, '.', '_' and '-'`))
		}
	}
	if h.TCPPort != 0 {
		set++
		errs = append(errs, validatePort(h.TCPPort, p.Child("tcpPort"))...)
	}
	if h.Command != nil {
		set++
		switch {
		case len(h.Command) == 0 || h.Command[0] == "":
			errs = append(errs, field.Required(p.Child("command").Index(0), "the executable to run"))
		default:
			for i, a := range h.Command {
				if strings.ContainsRune(a, 0) {
					errs = append(errs, field.Invalid(p.Child("command").Index(i), a, "must not contain NUL"))
				}
			}
		}
	}
	if set != 1 {
		errs = append(errs, field.Invalid(p, fmt.Sprintf("%d fields set", set),
			"set exactly one of namedPipe, tcpPort or command"))
	}
	return errs
}

func validateWins(w *WinsSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kind, ok := releaseKind(w.SourceURL); ok {
		errs = append(errs, validateWinsRelease(w, kind, p)...)
	} else {
		errs = append(errs, validateSourceURL(w.SourceURL, p.Child("sourceURL"))...)
		if w.Version != "" {
			errs = append(errs, field.Invalid(p.Child("version"), w.Version, "only a sourceURL of release:wins takes a version"))
		}
	}
	errs = append(errs, validateWindowsPath(w.Destination, p.Child("destination"))...)
	errs = append(errs, validateSHA256(w.SHA256, p.Child("sha256"))...)
	wl := p.Child("whiteList")
	for i, pp := range w.WhiteList.ProcessPaths {
		errs = append(errs, validateWindowsPath(pp, wl.Child("processPaths").Index(i))...)
	}
	for i, port := range w.WhiteList.ProxyPorts {
		errs = append(errs, validatePort(port, wl.Child("proxyPorts").Index(i))...)
	}
	return errs
}

// validateSourceURL accepts a local path, a file:// URL or an http(s):// URL
// (a provisioner's release:KIND is validateRelease's).
// Errors show the value with a URL's user and password redacted.
func validateSourceURL(s string, p *field.Path) field.ErrorList {
	if s == "" {
		return field.ErrorList{field.Required(p, "a local path, file:// or http(s):// URL")}
	}
	shown := redact.URLs(s)
	if hasControl(s) {
		return field.ErrorList{field.Invalid(p, shown, "must not contain control characters")}
	}
	scheme, ok := urlScheme(s)
	if !ok {
		return nil // a local path
	}
	u, err := url.Parse(s)
	switch {
	case err != nil && shown != s:
		// The parser's detail can quote part of the password.
		return field.ErrorList{field.Invalid(p, shown, "not a valid URL (a / ? # or % in a user or password must be written as a %XX escape)")}
	case err != nil:
		return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("not a valid URL: %v", err))}
	}
	switch scheme {
	case "http", "https":
		if u.Host == "" {
			return field.ErrorList{field.Invalid(p, shown, "an http(s) URL needs a host")}
		}
	case "file":
		if u.Path == "" || u.Opaque != "" {
			return field.ErrorList{field.Invalid(p, shown, "a file URL must be absolute: file:///path/to/file")}
		}
	default:
		return field.ErrorList{field.NotSupported(p, scheme+"://", []string{"a local path", "file://", "http://", "https://"})}
	}
	return nil
}

// urlScheme returns the lower-case scheme of s when s looks like a URL
// (scheme ":" with a scheme of two or more characters, so that a Windows
// drive letter such as C:\bin\x.exe stays a local path).
func urlScheme(s string) (string, bool) {
	i := strings.Index(s, ":")
	if i < 2 {
		return "", false
	}
	for j, r := range s[:i] {
		isLetter := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !isLetter && (j == 0 || !(r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.')) {
			return "", false
		}
	}
	return strings.ToLower(s[:i]), true
}

// IsLocalPathSource reports whether a sourceURL is a plain local path
// rather than a URL (file://, http://, https://). Only plain paths are
// resolved against the config file's directory.
func IsLocalPathSource(s string) bool {
	_, isURL := urlScheme(s)
	return s != "" && !isURL
}

// validateWindowsPath requires an absolute drive-letter path to a file, with
// backslashes, such as C:\k\kubelet.exe.
func validateWindowsPath(s string, p *field.Path) field.ErrorList {
	const example = `for example C:\k\kubelet.exe`
	if s == "" {
		return field.ErrorList{field.Required(p, "an absolute Windows path, "+example)}
	}
	if hasControl(s) {
		return field.ErrorList{field.Invalid(p, s, "must not contain control characters")}
	}
	if strings.Contains(s, "/") {
		return field.ErrorList{field.Invalid(p, s, "must use backslashes, "+example)}
	}
	if !driveRE.MatchString(s) {
		return field.ErrorList{field.Invalid(p, s, "must be an absolute Windows path with a drive letter, "+example)}
	}
	if len(s) > 32767 {
		return field.ErrorList{field.TooLong(p, s, 32767)}
	}
	rest := s[3:]
	if rest == "" || strings.HasSuffix(rest, `\`) {
		return field.ErrorList{field.Invalid(p, s, "must name a file, not a directory")}
	}
	for _, seg := range strings.Split(rest, `\`) {
		if seg == "" {
			return field.ErrorList{field.Invalid(p, s, `must not contain empty segments (\\)`)}
		}
		if err := winname.Check(seg); err != nil {
			return field.ErrorList{field.Invalid(p, s, "a path segment "+err.Error())}
		}
		if winname.ShortAlias(seg) {
			return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("a path segment %q has the form of an 8.3 short name (NAME~N), which stands for a long name on the node "+
				"(C:\\PROGRA~1 is C:\\Program Files) and would let one file pass for two: write the long name", seg))}
		}
	}
	if ops.IsSwdtName(s) {
		return field.ErrorList{field.Invalid(p, s, "ends with a name swdt gives its own files beside a destination (.swdt-new, .swdt-bak, ...), which swdt removes or replaces")}
	}
	return nil
}

// validateLocalPath checks a path on the machine running swdt.
func validateLocalPath(s string, p *field.Path) field.ErrorList {
	if hasControl(s) {
		return field.ErrorList{field.Invalid(p, s, "must not contain control characters")}
	}
	return nil
}

func validateSHA256(s string, p *field.Path) field.ErrorList {
	if s != "" && !sha256RE.MatchString(s) {
		return field.ErrorList{field.Invalid(p, s, "must be 64 hexadecimal digits")}
	}
	return nil
}

func validatePort(port int32, p *field.Path) field.ErrorList {
	if port < 1 || port > 65535 {
		return field.ErrorList{field.Invalid(p, port, "must be from 1 to 65535")}
	}
	return nil
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

func hasSpaceOrControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) })
}
