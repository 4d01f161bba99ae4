//go:build unix

// Package libvirtdtest starts a real libvirtd (Debian's libvirt-daemon)
// for tests, serving libvirt's built-in test hypervisor driver on a unix
// socket in a temporary directory.
//
// libvirtd runs in session mode (as an ordinary user, with its own
// runtime, config and cache directories under the temporary directory), so
// it needs neither the libvirt-qemu account of a system libvirtd nor
// /etc/libvirt, and never touches a libvirtd the machine may run. When the
// tests run as root, libvirtd is started as the user nobody for that. The
// test driver keeps its state per connection: a URI opened twice gives
// two fresh hypervisors.
//
// When libvirtd is missing the test is skipped, except when CI=true, where
// it fails: a CI run must never pass by silently testing nothing.
//
// It must never be imported by non-test code.
package libvirtdtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// LibvirtdPath is where Debian's libvirt-daemon installs libvirtd.
const LibvirtdPath = "/usr/sbin/libvirtd"

// Daemon is a running libvirtd.
type Daemon struct {
	// Socket is the read-write unix socket.
	Socket string
	// Dir is the temporary directory holding the daemon's directories
	// and its log (libvirtd.log).
	Dir string
}

// URI returns the URI that opens the test driver with path (for example
// "/default", the driver's built-in host with its running domain "test",
// or the absolute path of a test driver XML file) through this daemon.
func (d *Daemon) URI(path string) string {
	return "test+unix://" + path + "?socket=" + d.Socket
}

// Start starts libvirtd for t and stops it when t ends.
func Start(t testing.TB) *Daemon {
	t.Helper()
	if _, err := os.Stat(LibvirtdPath); err != nil {
		msg := LibvirtdPath + " is missing: install libvirt-daemon and libvirt-clients (make test-deps)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("libvirtd cannot run in CI: %s", msg)
		}
		t.Skip(msg)
	}
	// Not t.TempDir(): its parents are private to the test's user, and
	// libvirtd may run as nobody.
	dir, err := os.MkdirTemp("", "libvirtd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(LibvirtdPath)
	cmd.Dir = home
	cmd.Env = []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + home,
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Geteuid() == 0 {
		uid, gid := nobody(t)
		if err := os.Chown(home, uid, gid); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	logFile := filepath.Join(dir, "libvirtd.log")
	logOut, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logOut, logOut
	if err := cmd.Start(); err != nil {
		logOut.Close()
		t.Fatalf("start libvirtd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logOut.Close() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	d := &Daemon{Socket: filepath.Join(home, "run", "libvirt", "libvirt-sock"), Dir: dir}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(d.Socket); err == nil {
			return d
		}
		select {
		case err := <-exited:
			t.Fatalf("libvirtd exited before it listened (%v):\n%s", err, tail(logFile))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("libvirtd did not create %s within 30s:\n%s", d.Socket, tail(logFile))
		}
	}
}

// nobody returns the uid and gid of the user nobody.
func nobody(t testing.TB) (int, int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("libvirtd must not run as root here and there is no user nobody: %v", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		t.Fatalf("user nobody: uid %q gid %q", u.Uid, u.Gid)
	}
	return uid, gid
}

func tail(file string) string {
	data, _ := os.ReadFile(file)
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	return string(bytes.Join(lines[max(0, len(lines)-20):], []byte("\n")))
}

// DomainXML is a test driver file (for Daemon.URI) with one running
// domain, named name, with one network interface on a libvirt network.
// The test driver reports 192.168.122.3 as its address, whatever the
// file says.
func DomainXML(t testing.TB, name string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `<node>
  <domain type='test'>
    <name>%s</name>
    <memory>1048576</memory>
    <os><type>hvm</type></os>
    <devices>
      <interface type='network'>
        <mac address='52:54:00:5d:7a:01'/>
        <source network='default'/>
      </interface>
    </devices>
  </domain>
  <network>
    <name>default</name>
    <bridge name='virbr0'/>
    <ip address='192.168.122.1' netmask='255.255.255.0'>
      <dhcp><range start='192.168.122.2' end='192.168.122.254'/></dhcp>
    </ip>
  </network>
</node>
`, name)
	dir, err := os.MkdirTemp("", "libvirt-test-driver-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "host.xml")
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
