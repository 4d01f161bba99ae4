package remote

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// knownHostsMu serialises appends to known_hosts files from parallel dials
// within this process.
var knownHostsMu sync.Mutex

// hostKeyChecker verifies one hop's host key under a policy.
type hostKeyChecker struct {
	// files are searched; a new key is recorded in the first.
	files  []string
	policy string
	// why says where the policy comes from, for messages.
	why  string
	warn func(string)
	// db is nil when none of the files exists yet.
	db ssh.HostKeyCallback
	// err is the typed refusal, kept because the SSH library wraps it.
	err error
}

func newHostKeyChecker(h hop, warn func(string)) (*hostKeyChecker, error) {
	hk := &hostKeyChecker{files: h.knownHosts, policy: h.policy, why: h.policyWhy, warn: warn}
	if h.policy == PolicyInsecure {
		return hk, nil
	}
	var existing []string
	for _, f := range h.knownHosts {
		if _, err := os.Stat(f); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return nil, fmt.Errorf("known hosts: %w", err)
		}
		existing = append(existing, f)
	}
	if len(existing) == 0 {
		return hk, nil
	}
	db, err := knownhosts.New(existing...)
	if err != nil {
		return nil, fmt.Errorf("known hosts %s: %w", strings.Join(existing, ", "), err)
	}
	hk.db = db
	return hk, nil
}

// probeKey is a key no server has; checking it against known_hosts yields
// the keys recorded for a host (KeyError.Want).
var probeKey = sync.OnceValue(func() ssh.PublicKey {
	pub, _, _ := ed25519.GenerateKey(nil)
	k, _ := ssh.NewPublicKey(pub)
	return k
})

// algorithms orders host key algorithms so that those already recorded
// for addr come first: otherwise the server may present a key of another
// type that known_hosts lacks, and a perfectly good host looks changed.
func (h *hostKeyChecker) algorithms(addr string) []string {
	if h.db == nil {
		return nil
	}
	var ke *knownhosts.KeyError
	if err := h.db(addr, fakeAddr(addr), probeKey()); !errors.As(err, &ke) || len(ke.Want) == 0 {
		return nil
	}
	var known []string
	for _, w := range ke.Want {
		for _, a := range algorithmsForKeyType(w.Key.Type()) {
			if !slices.Contains(known, a) {
				known = append(known, a)
			}
		}
	}
	all := ssh.SupportedAlgorithms().HostKeys
	out := slices.Clone(known)
	for _, a := range all {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func algorithmsForKeyType(t string) []string {
	if t == ssh.KeyAlgoRSA {
		return []string{ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256, ssh.KeyAlgoRSA}
	}
	return []string{t}
}

func (h *hostKeyChecker) callback(addr string, remote net.Addr, key ssh.PublicKey) error {
	if h.policy == PolicyInsecure {
		msg := fmt.Sprintf("%s: not verifying the host key of %s (%s); anyone on the network path can impersonate it", h.why, addr, ssh.FingerprintSHA256(key))
		if h.warn != nil {
			h.warn(msg)
		}
		return nil
	}
	name := knownhosts.Normalize(addr)
	var err error
	if h.db != nil {
		err = h.db(addr, remote, key)
		if err == nil {
			return nil
		}
	} else {
		err = &knownhosts.KeyError{}
	}
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case errors.As(err, &re):
		h.err = fmt.Errorf("host key %s of %s is marked @revoked in %s:%d", ssh.FingerprintSHA256(key), name, re.Revoked.Filename, re.Revoked.Line)
	case errors.As(err, &ke) && len(ke.Want) > 0:
		ce := &HostKeyChangedError{Host: name, Got: ssh.FingerprintSHA256(key), KnownHostsFile: ke.Want[0].Filename, Line: ke.Want[0].Line}
		for _, w := range ke.Want {
			ce.Want = append(ce.Want, ssh.FingerprintSHA256(w.Key))
		}
		h.err = ce
	case errors.As(err, &ke):
		if h.policy == PolicyStrict {
			h.err = &UnknownHostError{Host: name, Fingerprint: ssh.FingerprintSHA256(key), KnownHostsFiles: h.files, Policy: h.why}
			break
		}
		if werr := appendKnownHost(h.files[0], addr, key); werr != nil {
			h.err = werr
		} else if h.warn != nil {
			// As ssh says it: the user learns which key they now trust.
			h.warn(fmt.Sprintf("Permanently added '%s' (%s) to %s", name, keyTypeName(key.Type()), h.files[0]))
		}
	default:
		h.err = fmt.Errorf("known hosts %s: %w", strings.Join(h.files, ", "), err)
	}
	return h.err
}

// keyTypeName is a host key type as ssh names it in messages: ED25519,
// RSA, ECDSA.
func keyTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "ecdsa-"):
		return "ECDSA"
	case strings.HasPrefix(t, "sk-ecdsa-"):
		return "ECDSA-SK"
	case strings.HasPrefix(t, "sk-ssh-ed25519"):
		return "ED25519-SK"
	}
	return strings.ToUpper(strings.TrimPrefix(t, "ssh-"))
}

// appendKnownHost records key for addr, creating the file (0600) and its
// directory (0700) when missing.
func appendKnownHost(file, addr string, key ssh.PublicKey) error {
	knownHostsMu.Lock()
	defer knownHostsMu.Unlock()
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return fmt.Errorf("record host key: %w", err)
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("record host key: %w", err)
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
	if _, err := f.WriteString(line); err != nil {
		f.Close()
		return fmt.Errorf("record host key in %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("record host key in %s: %w", file, err)
	}
	return nil
}

// fakeAddr turns host:port into a net.Addr for the known_hosts lookup.
func fakeAddr(hostport string) net.Addr {
	host, port, _ := net.SplitHostPort(hostport)
	return fakeNetAddr(net.JoinHostPort(host, port))
}

type fakeNetAddr string

func (a fakeNetAddr) Network() string { return "tcp" }
func (a fakeNetAddr) String() string  { return string(a) }
