package remote

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// ErrUnknownHost is matched (errors.Is) by an *UnknownHostError: the host
// has no key in known_hosts and the policy is strict (hostKeyPolicy strict,
// or StrictHostKeyChecking yes or ask in the ssh config).
var ErrUnknownHost = errors.New("unknown host")

// ErrWrongPassphrase is matched by a *PrivateKeyError when the passphrase
// given for a private key does not decrypt it.
var ErrWrongPassphrase = errors.New("wrong passphrase")

// ErrConnectionLost is matched by errors of calls that failed because the
// SSH connection dropped (after any retry).
var ErrConnectionLost = errors.New("ssh connection lost")

// ErrClosed is returned by calls on a Client after Close.
var ErrClosed = errors.New("ssh client closed")

// DialError is a failure to reach an SSH server (the node's, or a jump
// host's) or to complete its SSH handshake (before authentication).
type DialError struct {
	// Addr is the host:port dialled.
	Addr string
	// Stage is "connect" (TCP, the jump host's forward or starting the
	// ProxyCommand) or "handshake" (SSH).
	Stage string
	// Timeout is the dial timeout in force.
	Timeout time.Duration
	// Jump names the jump host that could not be reached; "" when it is
	// the node.
	Jump string
	// ViaJump names the jump host Addr was dialled through, if any.
	ViaJump string
	// ProxyCommand is the command Addr was reached with, if any.
	ProxyCommand string
	// Err is the underlying error.
	Err error
}

func (e *DialError) Error() string {
	who := "ssh server"
	if e.Jump != "" {
		who = "jump host " + e.Jump
	}
	what := fmt.Sprintf("cannot reach %s at %s", who, e.Addr)
	if e.Stage == "handshake" {
		what = fmt.Sprintf("ssh handshake with %s at %s did not complete", who, e.Addr)
	}
	hint := "check that the node is running, the address and port are right, sshd is started on the node and the port is open in its firewall"
	if e.Jump != "" {
		hint = "check that the jump host is up and that its HostName and Port in the ssh config are right"
	}
	switch {
	case e.ViaJump != "":
		what += " through jump host " + e.ViaJump
		hint = fmt.Sprintf("check that the host is running with sshd started, and that jump host %s can reach that address and port (its sshd must allow TCP forwarding)", e.ViaJump)
	case e.ProxyCommand != "":
		what += fmt.Sprintf(" with ProxyCommand %q", e.ProxyCommand)
		hint += "; run the ProxyCommand by hand to see that it connects"
	}
	return fmt.Sprintf("%s (dial timeout %s): %v; %s", what, e.Timeout, e.Err, hint)
}

func (e *DialError) Unwrap() error { return e.Err }

// AuthError means the server rejected every authentication method swdt
// could offer.
type AuthError struct {
	// User and Addr (host:port) say who logged in where.
	User, Addr string
	// Jump names the jump host that refused; "" when it is the node.
	Jump string
	// Tried describes what was offered, in order: for example
	// "publickey (ssh-agent: 1 key; /home/me/.ssh/id_ed25519)", "password".
	Tried []string
	// NotTried were available but not accepted by the server.
	NotTried []string
	// Allowed are the methods the server said it accepts, when known.
	Allowed []string
	// Err is the SSH library's final error.
	Err error
	// PasswordUnset says the password of credentials.passwordEnv could
	// not be tried ("SWDT_PASSWORD is unset"), when that is the case.
	PasswordUnset string
}

func (e *AuthError) Error() string {
	tried := "none"
	if len(e.Tried) > 0 {
		tried = strings.Join(e.Tried, ", ")
	} else if len(e.NotTried) == 0 {
		tried = "none (no ssh-agent keys, private key or password available)"
	}
	where := e.User + "@" + e.Addr
	if e.Jump != "" {
		where = fmt.Sprintf("jump host %s (%s)", e.Jump, where)
	}
	msg := fmt.Sprintf("ssh authentication failed for %s; tried: %s", where, tried)
	if len(e.NotTried) > 0 {
		msg += fmt.Sprintf("; not tried (the server does not accept them): %s", strings.Join(e.NotTried, ", "))
	}
	if len(e.Allowed) > 0 {
		msg += fmt.Sprintf("; server accepts: %s", strings.Join(e.Allowed, ", "))
	}
	if e.Jump != "" {
		return msg + fmt.Sprintf("; swdt logs in to jump hosts with ssh-agent and the keys of their IdentityFile (else ~/.ssh/id_*), never a password: check the User and IdentityFile of %s in the ssh config, or add its key to ssh-agent", e.Jump)
	}
	if e.PasswordUnset != "" {
		msg += fmt.Sprintf("; no password was tried: %s (credentials.passwordEnv)", e.PasswordUnset)
	}
	return msg + "; check the username, that the public key is in the node's administrators_authorized_keys (with only Administrators and SYSTEM allowed to read it), or the password"
}

func (e *AuthError) Unwrap() error { return e.Err }

// PasswordUnsetError is a node whose password should come from an
// environment variable that is unset or empty, with no private key or
// ssh-agent key to log in with instead.
type PasswordUnsetError struct {
	// Var is the variable credentials.passwordEnv names.
	Var string
	// NodeFile is the node file that names it, when known.
	NodeFile string
}

func (e *PasswordUnsetError) Error() string {
	where := "credentials.passwordEnv"
	if e.NodeFile != "" {
		where += " in " + e.NodeFile
	}
	return fmt.Sprintf("%s (%s), and there is no private key or ssh-agent key to log in with instead: export %s, or set credentials.privateKey, or add a key to ssh-agent",
		unsetOrEmpty(e.Var), where, e.Var)
}

// unsetOrEmpty says "SWDT_PASSWORD is unset" or "SWDT_PASSWORD is empty".
func unsetOrEmpty(name string) string {
	if _, ok := os.LookupEnv(name); ok {
		return name + " is empty"
	}
	return name + " is unset"
}

// UnknownHostError is a host without a known_hosts entry under the strict
// policy.
type UnknownHostError struct {
	// Host is the known_hosts name (host or [host]:port).
	Host string
	// Fingerprint is the SHA256 fingerprint the server offered.
	Fingerprint string
	// KnownHostsFiles are the files that were searched.
	KnownHostsFiles []string
	// Policy says why unknown hosts are refused, for example
	// "hostKeyPolicy is strict" or "StrictHostKeyChecking is ask in
	// /home/me/.ssh/config, which swdt treats as yes because it never prompts".
	Policy string
}

func (e *UnknownHostError) Error() string {
	return fmt.Sprintf("host %s is not in %s (server key %s) and %s; verify the fingerprint and add the key to %s (for example with ssh-keyscan), or set hostKeyPolicy: accept-new in the node file",
		e.Host, strings.Join(e.KnownHostsFiles, ", "), e.Fingerprint, e.Policy, e.KnownHostsFiles[0])
}

// Is makes errors.Is(err, ErrUnknownHost) true.
func (e *UnknownHostError) Is(target error) bool { return target == ErrUnknownHost }

// HostKeyChangedError is a host whose key differs from the one recorded in
// known_hosts. It may be an attack; it is usually a reinstalled VM.
type HostKeyChangedError struct {
	// Host is the known_hosts name (host or [host]:port).
	Host string
	// Got is the SHA256 fingerprint the server offered now.
	Got string
	// Want are the fingerprints recorded for the host.
	Want []string
	// KnownHostsFile and Line locate the first recorded key.
	KnownHostsFile string
	Line           int
}

func (e *HostKeyChangedError) Error() string {
	return fmt.Sprintf("HOST KEY CHANGED for %s: server offered %s but %s:%d has %s; this may be an attack, or the node was reinstalled: if you expect the change, remove the old key with `ssh-keygen -R '%s' -f %s` and connect again",
		e.Host, e.Got, e.KnownHostsFile, e.Line, strings.Join(e.Want, ", "), e.Host, e.KnownHostsFile)
}

// PrivateKeyError is a private key file that could not be used.
type PrivateKeyError struct {
	// Path is the key file.
	Path string
	// Err says why: ErrWrongPassphrase, a missing passphrase, a parse error.
	Err error
}

func (e *PrivateKeyError) Error() string {
	if errors.Is(e.Err, ErrWrongPassphrase) {
		return fmt.Sprintf("private key %s: wrong passphrase (from %s or the prompt)", e.Path, PassphraseEnv)
	}
	return fmt.Sprintf("private key %s: %v", e.Path, e.Err)
}

func (e *PrivateKeyError) Unwrap() error { return e.Err }

// RetriesExhaustedError is a call that kept failing with a retryable error
// until its try budget ran out.
type RetriesExhaustedError struct {
	// Op names the call, for example "upload C:\k\kubelet.exe".
	Op string
	// Attempts is how many times it was tried.
	Attempts int
	// Err is the last failure.
	Err error
}

func (e *RetriesExhaustedError) Error() string {
	return fmt.Sprintf("%s: failed after %d attempts: %v", e.Op, e.Attempts, e.Err)
}

func (e *RetriesExhaustedError) Unwrap() error { return e.Err }
