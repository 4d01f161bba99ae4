package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// libvirtdPath is where Debian's libvirt-daemon installs libvirtd.
const libvirtdPath = "/usr/sbin/libvirtd"

// testDomain is the libvirt test driver's host for the demo: one running
// domain, win2022, that already has a snapshot, clean. The test driver
// keeps its state per connection, and every swdt run is a connection of
// its own, so the snapshot to revert to comes with the file.
const testDomain = `<name>win2022</name>
    <uuid>6b1c1c5e-0d1a-4a55-9f5e-5a1e2b3c4d5e</uuid>
    <memory>4194304</memory>
    <os><type>hvm</type></os>
    <devices>
      <interface type='network'>
        <mac address='52:54:00:5d:7a:01'/>
        <source network='default'/>
      </interface>
    </devices>`

func testDriverXML() string {
	return `<node xmlns:test="http://libvirt.org/schemas/domain/test/1.0">
  <domain type='test'>
    ` + testDomain + `
    <test:domainsnapshot>
      <name>clean</name>
      <state>running</state>
      <creationTime>1763888000</creationTime>
      <memory snapshot='internal'/>
      <active>1</active>
      <domain type='test'>
    ` + testDomain + `
      </domain>
    </test:domainsnapshot>
  </domain>
  <network>
    <name>default</name>
    <bridge name='virbr0'/>
    <ip address='192.168.122.1' netmask='255.255.255.0'>
      <dhcp><range start='192.168.122.2' end='192.168.122.254'/></dhcp>
    </ip>
  </network>
</node>
`
}

// libvirtDemo shows swdt vm against a real libvirtd serving libvirt's test
// driver, when libvirtd is installed, and says so when it is not. It
// returns the number of steps it ran.
func libvirtDemo(ctx context.Context, out io.Writer, dir, swdt string) (int, error) {
	if _, err := os.Stat(libvirtdPath); err != nil {
		header(out, "swdt vm", "skipped: libvirtd is not installed (apt-get install libvirt-daemon libvirt-clients, or make test-deps);\n"+
			"  with it, the demo shows a VM snapshot and revert against libvirt's test driver")
		return 0, nil
	}
	t := time.Now()
	header(out, "prepare swdt vm", "a real libvirtd serving libvirt's TEST driver (no VM runs): domain win2022 with a snapshot, clean")
	d, err := startLibvirtd(ctx)
	if err != nil {
		return 0, err
	}
	defer d.stop(out)
	hostXML := filepath.Join(d.dir, "host.xml")
	if err := os.WriteFile(hostXML, []byte(testDriverXML()), 0o644); err != nil {
		return 0, err
	}
	uri := "test+unix://" + hostXML + "?socket=" + d.socket
	doc := fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: win2022
spec:
  credentials:
    username: Administrator
    privateKey: id_ed25519
  vm:
    provider: libvirt
    name: win2022
    libvirt:
      uri: %q
`, uri)
	if err := os.WriteFile(filepath.Join(dir, "vm.yaml"), []byte(doc), 0o600); err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "  libvirtd: %s (session mode, socket %s)\n  vm.yaml:\n%s", libvirtdPath, d.socket, indent(doc, "    | "))
	done(out, t)

	steps := []step{
		{title: "swdt vm snapshots", why: "list the VM's snapshots through libvirtd's protocol (go-libvirt, no virsh)", config: "vm.yaml"},
		{title: "swdt vm stop", why: "shut the VM down (the test driver's guest always obeys)", config: "vm.yaml",
			check: func(s string) error { return expect(s, "shut down") }},
		{title: "swdt vm revert", why: "back to the snapshot clean: the VM runs again as it was", config: "vm.yaml", args: []string{"clean"},
			check: func(s string) error { return expect(s, "running") }},
	}
	for i, s := range steps {
		if err := runStep(ctx, out, dir, swdt, i+1, len(steps), s); err != nil {
			d.dumpLog(out)
			return 0, err
		}
	}
	return len(steps), nil
}

func expect(stdout, want string) error {
	if !strings.Contains(stdout, want) {
		return fmt.Errorf("swdt printed no %q:\n%s", want, stdout)
	}
	return nil
}

// libvirtdProc is a libvirtd the demo started.
type libvirtdProc struct {
	cmd    *exec.Cmd
	dir    string
	socket string
	log    string
	exited chan struct{}
}

// startLibvirtd runs libvirtd in session mode with its directories in a
// fresh temporary directory (readable by the user nobody, whom it runs as
// when the demo runs as root), and waits for its socket.
func startLibvirtd(ctx context.Context) (*libvirtdProc, error) {
	dir, err := os.MkdirTemp("", "swdt-demo-libvirtd-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, err
	}
	p := &libvirtdProc{dir: dir, socket: filepath.Join(home, "run", "libvirt", "libvirt-sock"),
		log: filepath.Join(dir, "libvirtd.log"), exited: make(chan struct{})}
	p.cmd = exec.Command(libvirtdPath)
	p.cmd.Dir = home
	p.cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=" + home,
		"XDG_RUNTIME_DIR=" + filepath.Join(home, "run"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache")}
	detach(p.cmd)
	if os.Geteuid() == 0 {
		u, err := user.Lookup("nobody")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("libvirtd must not run as root in session mode and there is no user nobody: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(home, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		asUser(p.cmd, uid, gid)
	}
	logf, err := os.Create(p.log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start libvirtd: %w", err)
	}
	go func() { p.cmd.Wait(); logf.Close(); close(p.exited) }()
	deadline := time.After(30 * time.Second)
	for {
		if _, err := os.Stat(p.socket); err == nil {
			return p, nil
		}
		select {
		case <-p.exited:
			err = errors.New("libvirtd exited before it listened")
		case <-deadline:
			err = errors.New("libvirtd did not listen within 30s")
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(50 * time.Millisecond):
			continue
		}
		p.dumpLog(os.Stderr)
		p.stop(io.Discard)
		return nil, err
	}
}

// stop interrupts libvirtd, kills it if it has not exited within 5s, and
// removes its directory.
func (p *libvirtdProc) stop(out io.Writer) {
	interrupt(p.cmd, p.exited)
	os.RemoveAll(p.dir)
	fmt.Fprintln(out, "libvirtd stopped.")
}

func (p *libvirtdProc) dumpLog(out io.Writer) {
	data, _ := os.ReadFile(p.log)
	fmt.Fprintf(out, "libvirtd log:\n%s\n", indent(string(data), "  | "))
}
