package vm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/node"
)

// systemSocketDir is where a system libvirtd (or the modular virt*d
// daemons) listens.
const systemSocketDir = "/var/run/libvirt"

// libvirtTarget is a parsed libvirt URI: how to reach libvirtd and which
// driver to open there.
type libvirtTarget struct {
	display string               // the URI without a password, for messages
	driver  golibvirt.ConnectURI // what libvirtd is asked to open, e.g. qemu:///system
	// sockets are the unix sockets tried in turn, on this machine or,
	// with sshHost set, on that host.
	sockets []string
	// sshHost is [user@]host[:port] for the ssh transport.
	sshHost string
}

// parseLibvirtURI understands driver[+unix|+ssh]://[user@host[:port]]/path
// with libvirt's ?socket= parameter.
func parseLibvirtURI(s string) (libvirtTarget, error) {
	u, err := url.Parse(s)
	if err != nil {
		return libvirtTarget{}, fmt.Errorf("not a libvirt URI: %w", err)
	}
	t := libvirtTarget{display: u.Redacted(), driver: golibvirt.RemoteURI(u)}
	driver, transport, ok := strings.Cut(u.Scheme, "+")
	if !ok {
		transport = "unix"
		if u.Host != "" {
			transport = "tls"
		}
	}
	if sock := u.Query().Get("socket"); sock != "" {
		t.sockets = []string{sock}
	}
	switch transport {
	case "unix":
		if t.sockets == nil {
			t.sockets = defaultSockets(driver, u.Path == "/session")
		}
	case "ssh":
		t.sshHost = u.Host
		if u.User != nil {
			t.sshHost = u.User.Username() + "@" + u.Host
		}
		if t.sockets == nil {
			t.sockets = defaultSockets(driver, false)
		}
	default:
		return t, fmt.Errorf("%s: the %s transport is not supported: use the unix (local) or ssh transport", t.display, transport)
	}
	return t, nil
}

// defaultSockets are the sockets of the monolithic libvirtd and of the
// driver's modular daemon (virtqemud for qemu), system-wide or the user's
// session ones.
func defaultSockets(driver string, session bool) []string {
	dir := systemSocketDir
	if session {
		dir = filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "libvirt")
		if os.Getenv("XDG_RUNTIME_DIR") == "" {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache", "libvirt")
		}
	}
	return []string{filepath.Join(dir, "libvirt-sock"), filepath.Join(dir, "virt"+driver+"d-sock")}
}

// dial opens a stream to libvirtd. closeFn (may be nil) closes what the
// stream runs over.
func (t libvirtTarget) dial(ctx context.Context, creds v1alpha1.CredentialsSpec, opts Options) (net.Conn, func(), error) {
	if t.sshHost == "" {
		conn, err := dialFirst(t.sockets, func(path string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: check that libvirtd (or virtqemud) runs and that you may use its socket (group libvirt)", err)
		}
		return conn, nil, nil
	}
	client, err := node.DialHost(ctx, t.sshHost, creds, opts.dialTimeout(), opts.hop(opts.Logger))
	if err != nil {
		return nil, nil, fmt.Errorf("ssh to %s: %w", t.sshHost, err)
	}
	conn, err := dialFirst(t.sockets, func(path string) (net.Conn, error) { return client.DialUnix(ctx, path) })
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("on %s: %w: check that libvirtd runs there and that the SSH user may use its socket (group libvirt), or name it with ?socket=", t.sshHost, err)
	}
	return conn, func() { client.Close() }, nil
}

// dialFirst tries each socket in turn and returns the first that answers.
func dialFirst(sockets []string, dial func(path string) (net.Conn, error)) (net.Conn, error) {
	var errs []error
	for _, s := range sockets {
		conn, err := dial(s)
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no libvirt socket answered (%s): %w", strings.Join(sockets, ", "), errors.Join(errs...))
}

// hop is the connection options of an SSH hop to a hypervisor host:
// keys and user come from ~/.ssh/config (or ssh-agent), host keys are
// checked as for the node.
func (o Options) hop(logger *slog.Logger) node.ConnectOptions {
	return node.ConnectOptions{Logger: logger, Warn: o.Warn, Passphrase: o.Passphrase}
}
