// Command simnode runs a simulated Windows Server 2022 node on localhost:
// an SSH and SFTP server that runs swdt-agent's op handlers in-process over
// a simulated Windows layer. It is a simulator for demos, tests and
// benchmarks, not Windows.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh/knownhosts"

	"sigs.k8s.io/swdt/pkg/simnode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "simnode:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

const usageText = `simnode - a SIMULATED Windows Server 2022 node for swdt (this is not Windows)

Usage:
  simnode --state-dir DIR [--listen 127.0.0.1:2222] [--authorized-key FILE]
          [--password PW] [--user Administrator] [--non-admin NAME=PUBKEYFILE]
          [--reset] [fault flags]

simnode serves SSH (key and password auth, persistent host key) with an SFTP
subsystem that maps Windows paths (/C:/k/kubelet.exe) into DIR/fs, and runs
swdt-agent's op handlers in-process (once swdt has uploaded the agent to
C:\Program Files\swdt) over a simulated Windows layer, a state model kept in
DIR/state.json: services with states, PIDs, dependencies and
start/stop delays; executables locked while they run (write and delete fail,
rename works, as on NTFS); registry values; firewall rules; Chocolatey; named
pipes owned by running services; file owners and DACLs with Windows
Server's defaults (users may create files in C:\ProgramData and in folders
below C:\, not in C:\Program Files or C:\Windows), which --non-admin
accounts obey over SFTP and in the agent. The agent's path runs the agent
only when its bytes are the embedded agent's; other bytes are logged as
"ran untrusted program PATH" and fail. Any other command gets cmd.exe's
"is not recognized" error, unless the session has a terminal: a shell, and
a command with ssh -t, get a small cmd.exe look-alike that runs the
simulated programs (pkg/simnode/front/shell.go). Port forwarding (direct-tcpip)
reaches this machine's loopback only, and shutdown.exe /r plays a reboot
(connections drop; Automatic services start again). A fresh DIR is seeded
like a new VM: RDP off, no
Chocolatey, containerd, kubelet and kube-proxy running, no wins.

Markers (byte strings anywhere in a service's binary, read when it starts):
  SIMNODE-CRASH-ON-START  the service reaches Running, then exits with code 1
                          ("terminated unexpectedly" in its event log)
  SIMNODE-HANG-ON-STOP    a stop leaves the service StopPending until its
                          process is killed
  SIMNODE-WINS-NO-PIPE    the service runs without creating its named pipes
                          (like rancher/wins v0.16 and later)
  SIMNODE-EXIT-ON-STOP    a stop ends with the process exiting before it
                          reports Stopped: a failure, whose failure actions run
  SIMNODE-VERSION=1.2.3   the file's version as Get-Item reports it (in the
                          first MiB of the file)

Wine (--wine): the uploaded swdt-agent.exe really runs, under Wine, with
the C: drive a Wine prefix's drive_c in DIR/wine, and services are real
Windows programs in Wine's service manager. The first start boots the
prefix (about 15 s, 700 MB); it needs apt-get install wine wine64
gcc-mingw-w64-x86-64-win32 (or make test-deps).

Faults (also in DIR/faults.json, re-read on every connection, op and upload;
edit it while simnode runs):
  --op-latency OP=MS       delay an op (OP "*" for every op); repeatable
  --cut-after-bytes N      drop the SSH connection after N bytes of SFTP
                           uploads (once, then cleared)
  --fail-op OP             fail an op once with kind "injected"; repeatable
  --choco-download-fails   the Chocolatey install script cannot download

Real Windows behaviour (see pkg/simnode/README.md):
  --kubelet-setup WAY      how the kubelet service runs C:\k\kubelet.exe: sc,
                           nssm, or nssm-powershell (PrepareNode.ps1's nssm +
                           powershell.exe + StartKubelet.ps1 process tree)
  --scanner-hold DURATION  a virus scanner holds every fresh or just-run
                           executable that long (rename/delete: error 32)
  --language-mode MODE     full, or constrained (a WDAC/AppLocker node)
  --arch ARCH              the processor architecture: amd64 (default) or
                           arm64 (C:\Windows\SysArm32 exists, node facts
                           say arm64)
  --clock-offset DURATION  the node's clock runs that far ahead (negative:
                           behind): the simulated kubelet's Lease times
An agent runs on to the end of its op when its connection drops, as under
OpenSSH for Windows; an SSH signal request ends it.

Flags:
`

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// run starts simnode and serves until ctx ends. ready, when not nil,
// receives the server once it listens (for tests).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, ready func(*simnode.Server)) error {
	fs := flag.NewFlagSet("simnode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		listen        = fs.String("listen", "127.0.0.1:2222", "address to listen on")
		stateDir      = fs.String("state-dir", "", "state directory (required; created and seeded when empty)")
		authorizedKey = fs.String("authorized-key", "", "OpenSSH public key or authorized_keys `file` allowed to log in")
		password      = fs.String("password", os.Getenv("SIMNODE_PASSWORD"), "password of --user (default $SIMNODE_PASSWORD)")
		user          = fs.String("user", "Administrator", "administrator account name")
		nonAdmin      = fs.String("non-admin-user", "", "also accept this `name` as a non-administrator account (same keys/password)")
		hostname      = fs.String("hostname", "WIN-SIMNODE01", "computer name of a new state")
		reset         = fs.Bool("reset", false, "discard the state (not the host key) and seed a fresh VM")
		bare          = fs.Bool("bare", false, "seed a new state as a VM with only OpenSSH (no containerd, kubelet, kube-proxy): what swdt join starts from")
		startDelay    = fs.Duration("start-delay", simnode.DefaultDelays().ServiceStart, "how long services stay StartPending")
		stopDelay     = fs.Duration("stop-delay", simnode.DefaultDelays().ServiceStop, "how long services stay StopPending")
		crashAfter    = fs.Duration("crash-after", simnode.DefaultDelays().CrashAfter, "how long a SIMNODE-CRASH-ON-START service runs")
		shutdownGrace = fs.Duration("shutdown-grace", simnode.DefaultDelays().ShutdownGrace, "how long after shutdown.exe /r the machine goes down at the earliest")
		bootTime      = fs.Duration("boot-time", simnode.DefaultDelays().Boot, "how long a rebooting machine refuses SSH")
		cutAfter      = fs.Int64("cut-after-bytes", 0, "fault: drop the connection after N bytes of SFTP uploads")
		chocoFails    = fs.Bool("choco-download-fails", false, "fault: the Chocolatey install cannot download")
		languageMode  = fs.String("language-mode", "", "PowerShell's language `mode`: full, or constrained (a WDAC/AppLocker node)")
		scannerHold   = fs.Duration("scanner-hold", 0, "play a virus scanner that holds every freshly written or just-run executable for `duration` (rename and delete fail with a sharing violation)")
		kubeletSetup  = fs.String("kubelet-setup", "", "make the kubelet service run C:\\k\\kubelet.exe `way`: sc, nssm or nssm-powershell (PrepareNode.ps1's)")
		release       = fs.String("windows-server", "", "make the node that Windows Server `release`: 2022 (a new state's) or 2019, whose deleted files keep their names while another program holds them open")
		arch          = fs.String("arch", "", "the processor `architecture`: amd64 (default) or arm64")
		fileSystem    = fs.String("file-system", "", "C:'s file `system`: NTFS (default) or ReFS, which clones blocks as a Dev Drive does (btrfs or XFS under the state directory share them; elsewhere they are copied)")
		clockOffset   = fs.Duration("clock-offset", 0, "the node's clock runs this far ahead of the host's (negative: behind), as a VM's drifts; the simulated kubelet stamps its Lease with it")
		verbose       = fs.Bool("v", false, "log connections and ops to stderr")
		wine          = fs.Bool("wine", false, "run the uploaded agent and the services it registers under Wine, in a prefix in DIR/wine (see pkg/simnode/README.md)")
		latency       multiFlag
		failOps       multiFlag
		nonAdmins     multiFlag
	)
	fs.Var(&nonAdmins, "non-admin", "add a non-administrator account `NAME=PUBKEYFILE` that logs in with that key (repeatable)")
	fs.Var(&latency, "op-latency", "fault: `OP=MS` delay (repeatable)")
	fs.Var(&failOps, "fail-op", "fault: fail `OP` once (repeatable)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageText)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *stateDir == "" {
		return usageError{errors.New("--state-dir is required")}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	opts := simnode.Options{
		Listen:             *listen,
		StateDir:           *stateDir,
		User:               *user,
		Password:           *password,
		AuthorizedKeysFile: *authorizedKey,
		Hostname:           *hostname,
		Bare:               *bare,
		Delays: &simnode.Delays{ServiceStart: *startDelay, ServiceStop: *stopDelay, CrashAfter: *crashAfter,
			ShutdownGrace: *shutdownGrace, Boot: *bootTime},
		ClockOffset: *clockOffset,
		Release:     *release,
		FileSystem:  *fileSystem,
		Logger:      slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})),
	}
	if *wine {
		opts.Wine = &simnode.Wine{}
	}
	if *languageMode != "" {
		mode, err := simnode.ParseLanguageMode(*languageMode)
		if err != nil {
			return usageError{fmt.Errorf("--language-mode: %w", err)}
		}
		opts.LanguageMode = mode
	}
	if *arch != "" {
		a, err := simnode.ParseArch(*arch)
		if err != nil {
			return usageError{fmt.Errorf("--arch: %w", err)}
		}
		opts.Arch = a
	}
	if *scannerHold < 0 {
		return usageError{fmt.Errorf("--scanner-hold %s: want a positive duration", *scannerHold)}
	}
	opts.ScannerHold = *scannerHold
	if *kubeletSetup != "" {
		k, err := simnode.ParseKubeletSetup(*kubeletSetup)
		if err != nil {
			return usageError{fmt.Errorf("--kubelet-setup: %w", err)}
		}
		opts.KubeletSetup = k
	}
	if *nonAdmin != "" {
		opts.Accounts = []simnode.Account{{Name: *nonAdmin, Password: *password}}
	}
	for _, v := range nonAdmins {
		a, err := simnode.ParseNonAdmin(v)
		if err != nil {
			return usageError{err}
		}
		opts.Accounts = append(opts.Accounts, a)
	}
	if *authorizedKey == "" && *password == "" {
		return usageError{errors.New("give --authorized-key or --password (or both), or nobody can log in")}
	}
	faultFlags := *cutAfter != 0 || *chocoFails || len(latency) > 0 || len(failOps) > 0
	if faultFlags {
		f := simnode.Faults{CutAfterBytes: *cutAfter, ChocoDownloadFails: *chocoFails, FailOps: failOps}
		for _, l := range latency {
			op, ms, ok := strings.Cut(l, "=")
			n, err := strconv.Atoi(ms)
			if !ok || err != nil || n < 0 {
				return usageError{fmt.Errorf("--op-latency %q: want OP=MS", l)}
			}
			if f.OpLatencyMS == nil {
				f.OpLatencyMS = map[string]int{}
			}
			f.OpLatencyMS[op] = n
		}
		opts.Faults = &f
	}
	if *reset {
		for _, p := range []string{"state.json", "faults.json", "fs", "wine"} {
			if err := os.RemoveAll(filepath.Join(*stateDir, p)); err != nil {
				return fmt.Errorf("reset: %w", err)
			}
		}
		if !faultFlags {
			opts.Faults = &simnode.Faults{}
		}
	}
	srv, err := simnode.New(opts)
	if err != nil {
		return err
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer srv.Close()
	knownHosts := filepath.Join(*stateDir, "known_hosts")
	line := knownhosts.Line([]string{knownhosts.Normalize(srv.Addr())}, srv.HostKey())
	if err := os.WriteFile(knownHosts, []byte(line+"\n"), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", knownHosts, err)
	}
	absKnown, _ := filepath.Abs(knownHosts)
	if host, _, err := net.SplitHostPort(srv.Addr()); err == nil {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			fmt.Fprintln(stderr, "simnode: warning: listening on a non-loopback address; anyone who can reach it and holds a key can change this simulator's state")
		}
	}
	privateKey := "~/.ssh/id_ed25519   # the private key of --authorized-key"
	if *authorizedKey != "" {
		if k := strings.TrimSuffix(*authorizedKey, ".pub"); k != *authorizedKey {
			if _, err := os.Stat(k); err == nil {
				privateKey, _ = filepath.Abs(k)
			}
		}
	}
	what := "a SIMULATED Windows Server 2022 node (this is not Windows)"
	if *wine {
		what = "a node whose agent and services run under Wine (this is not Windows)"
	}
	fmt.Fprintf(stdout, `simnode: %s
  address:   %s
  host key:  %s
  state:     %s
  stop with Ctrl-C; see --help for markers and faults

node.yaml:
---
apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: simnode
spec:
  credentials:
    hostname: %s
    username: %s
    privateKey: %s
    knownHostsFile: %s
    hostKeyPolicy: accept-new
---
`, what, srv.Addr(), srv.HostKeyFingerprint(), *stateDir, srv.Addr(), *user, privateKey, absKnown)
	if ready != nil {
		ready(srv)
	}
	<-ctx.Done()
	fmt.Fprintln(stderr, "simnode: stopping")
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		return errors.New("connections did not close within 5s")
	}
	return nil
}
