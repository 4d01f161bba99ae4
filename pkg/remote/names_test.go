package remote

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// hostile is a host name that, put unquoted into a ProxyCommand, makes sh
// create the file PWNED in its working directory.
const hostile = "x|touch${IFS}PWNED"

// pwned fails the test when the shell ran what a hostile name carried.
func pwned(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "PWNED")); err == nil {
		t.Error("a shell ran the command a name carried: PWNED was created")
	}
}

// A host name, user or port with shell metacharacters is refused as
// OpenSSH refuses it, through whichever directive it comes, before any
// ProxyCommand runs: the ProxyCommand (nc %h %p %r, run by /bin/sh) never
// sees it.
func TestHostileNamesNeverReachAShell(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the ProxyCommand tests use sh")
	}
	const proxy = "Host *\n  ProxyCommand nc %h %p %r\n"
	tests := []struct {
		name, host, user, config, want string
	}{
		{name: "the node file's host name", host: hostile, config: proxy,
			want: `host "x|touch${IFS}PWNED": a host name must not contain '|'`},
		{name: "a HostName", host: "winnode", config: "Host winnode\n  HostName " + hostile + "\n" + proxy,
			want: `HostName "x|touch${IFS}PWNED" for winnode: a host name must not contain '|'`},
		{name: "a HostName made of %h", host: "win;touch${IFS}PWNED", config: "Host *\n  HostName %h.example\n  ProxyCommand nc %h %p\n",
			want: `a host name must not contain ';'`},
		{name: "the node file's user", host: "winnode", user: "a;touch${IFS}PWNED", config: proxy,
			want: `user "a;touch${IFS}PWNED": a user name must not contain ';'`},
		{name: "a User", host: "winnode", config: "Host winnode\n  User a|touch${IFS}PWNED\n" + proxy,
			want: `a user name must not contain '|'`},
		{name: "a Port", host: "winnode", config: "Host winnode\n  Port 22;touch${IFS}PWNED\n" + proxy,
			want: `port "22;touch${IFS}PWNED" is not a number from 1 to 65535`},
		{name: "a ProxyJump host", host: "winnode", config: "Host winnode\n  ProxyJump " + hostile + "\n" + proxy,
			want: `host "x|touch${IFS}PWNED": a host name must not contain '|'`},
		{name: "a jump host's HostName", host: "winnode", config: "Host winnode\n  ProxyJump bastion\nHost bastion\n  HostName " + hostile + "\n" + proxy,
			want: "HostName"},
		{name: "a host name that reads as an option", host: "-oProxyCommand=touch${IFS}PWNED", config: proxy,
			want: "must not start with '-'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			user := tt.user
			if user == "" && !strings.Contains(tt.config, "User ") {
				user = "Administrator"
			}
			cfg := Config{Host: tt.host, User: user, KnownHostsFile: filepath.Join(dir, "known_hosts"), HostKeyPolicy: PolicyStrict,
				SSHConfigFile: writeSSHConfig(t, tt.config), DialTimeout: DefaultDialTimeout}
			c, err := Dial(t.Context(), cfg)
			if err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
			pwned(t, dir)
		})
	}
}

// A name OpenSSH accepts reaches a ProxyCommand as one word, exactly as
// written, whatever sh would otherwise make of it (a backslash, two
// spaces, a $, a glob).
func TestProxyCommandTokensStayOneWord(t *testing.T) {
	tests := []struct{ name, host, user string }{
		{name: "a domain user", host: "winnode", user: `CORP\dev`},
		{name: "a user with two spaces", host: "winnode", user: "Jane  Doe"},
		{name: "a user with a dollar", host: "winnode", user: "svc$HOME"},
		{name: "a host name with a glob", host: "win*", user: "dev"},
		{name: "an IPv6 address with a zone", host: "fe80::1%eth0", user: "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, log := ncCommand(t, "", "%h %p %r %n")
			dir := t.TempDir()
			t.Chdir(dir)
			// What the glob would match.
			writeFile(t, filepath.Join(dir, "winXYZ"), "")
			cfg := Config{Host: tt.host, User: tt.user, KnownHostsFile: filepath.Join(dir, "known_hosts"), HostKeyPolicy: PolicyStrict,
				SSHConfigFile: writeSSHConfig(t, "Host *\n  ProxyCommand "+cmd+"\n"), DialTimeout: DefaultDialTimeout}
			if c, err := Dial(t.Context(), cfg); err == nil {
				c.Close()
				t.Fatal("Dial succeeded through a ProxyCommand that knows no route")
			}
			_, got, _ := strings.Cut(strings.TrimSpace(string(must(os.ReadFile(log)))), " ")
			if want := strings.Join([]string{tt.host, "22", tt.user, tt.host}, " "); got != want {
				t.Errorf("the ProxyCommand got %q, want %q", got, want)
			}
		})
	}
}

// Quoting holds on its own: even a name the checks would refuse stays one
// word when it is substituted, and the shell runs nothing it carries.
func TestProxyCommandQuoting(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the ProxyCommand tests use sh")
	}
	dir := t.TempDir()
	t.Chdir(dir)
	user := `it's;touch PWNED`
	cmd, err := proxyCommand("printf '%%s\\n' %h %p %r %n", hop{name: hostile, addr: net.JoinHostPort(hostile, "22"), user: user})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := startProxyCommand(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(pc)
	pc.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n"), []string{hostile, "22", user, hostile}; !slices.Equal(got, want) {
		t.Errorf("the ProxyCommand %q printed %q, want %q", cmd, got, want)
	}
	pwned(t, dir)
}
