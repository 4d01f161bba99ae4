package v1alpha1

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validNode returns a defaulted node that passes validation.
func validNode() *Node {
	n := &Node{
		Spec: NodeSpec{
			Credentials: CredentialsSpec{
				Hostname:    "10.0.0.5:22",
				Username:    "Administrator",
				PrivateKey:  "/home/dev/.ssh/id_ed25519",
				PasswordEnv: "SWDT_PASSWORD",
			},
			Setup: SetupSpec{
				ChocoPackages:  []string{"vim", "grep", "git.install"},
				AuthorizedKeys: []string{"/home/dev/.ssh/id_ed25519.pub"},
			},
			Kubernetes: KubernetesSpec{Provisioners: []ProvisionerSpec{
				{
					Name:        "containerd",
					Version:     "1.7.11",
					SourceURL:   "/src/bin/containerd.exe",
					Destination: `C:\Program Files\containerd\containerd.exe`,
					SHA256:      strings.Repeat("ab", 32),
					HealthChecks: []HealthCheck{
						{NamedPipe: "containerd-containerd"},
					},
				},
				{
					Name:         "kubelet",
					SourceURL:    "https://dl.k8s.io/v1.33.0/bin/windows/amd64/kubelet.exe",
					Destination:  `C:\k\kubelet.exe`,
					HealthChecks: []HealthCheck{{TCPPort: 10250}, {Command: []string{`C:\k\kubelet.exe`, "--version"}}},
				},
				{Name: "kube-proxy", SourceURL: "file:///src/kube-proxy.exe", Destination: `C:\k\kube-proxy.exe`},
			}},
			Wins: &WinsSpec{
				SourceURL: "./bin/wins.exe",
				WhiteList: WinsWhiteList{ProcessPaths: []string{`C:\etc\rancher\wins\smoke.exe`}, ProxyPorts: []int32{9796}},
			},
		},
	}
	SetDefaults_Node(n)
	return n
}

func TestValidateNode(t *testing.T) {
	prov := func(n *Node, i int) *ProvisionerSpec { return &n.Spec.Kubernetes.Provisioners[i] }
	tests := []struct {
		name   string
		mutate func(n *Node)
		// want lists "type field" of every expected error, in order.
		want []string
	}{
		{name: "valid", mutate: func(*Node) {}},
		{name: "experiment shape with password", mutate: func(n *Node) {
			n.Spec.Credentials = CredentialsSpec{Hostname: "10.0.0.5:22", Username: "Administrator", Password: "s3cret"}
			n.Spec.Wins = nil
			SetDefaults_Node(n)
		}},
		{name: "hostname variants are valid", mutate: func(n *Node) {
			for _, h := range []string{"winworker", "win.example.com", "[fe80::1]:2222", "[fe80::1]", "fe80::1", "192.168.122.220"} {
				n.Spec.Credentials.Hostname = h
				if errs := ValidateNode(n); len(errs) > 0 {
					panic(h + ": " + errs.ToAggregate().Error())
				}
			}
		}},
		{name: "empty name and hostname", mutate: func(n *Node) { n.Name = ""; n.Spec.Credentials.Hostname = "" },
			want: []string{"FieldValueRequired metadata.name", "FieldValueRequired spec.credentials.hostname"}},
		{name: "name with space", mutate: func(n *Node) { n.Name = "win worker" },
			want: []string{"FieldValueInvalid metadata.name"}},
		{name: "name too long", mutate: func(n *Node) { n.Name = strings.Repeat("a", 254) },
			want: []string{"FieldValueTooLong metadata.name"}},
		{name: "hostname with whitespace", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "10.0.0.5 :22" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname with control char", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "host\x00" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname port zero", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "host:0" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname port too big", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "host:65536" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname port not a number", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "host:ssh" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname empty port", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "host:" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname unbalanced bracket", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "[fe80::1:22" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname with user", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "admin@host" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname only port", mutate: func(n *Node) { n.Spec.Credentials.Hostname = ":22" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname with a pipe and an expansion (OpenSSH refuses it)", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "x|touch${IFS}PWNED" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname with a command substitution", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "$(reboot):22" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname with a semicolon", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "win;id" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname with backquotes", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "`id`" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname that reads as an option", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "-oProxyCommand=id" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "hostname port with a sign", mutate: func(n *Node) { n.Spec.Credentials.Hostname = "host:+22" },
			want: []string{"FieldValueInvalid spec.credentials.hostname"}},
		{name: "username with a command substitution", mutate: func(n *Node) { n.Spec.Credentials.Username = "$(id)" },
			want: []string{"FieldValueInvalid spec.credentials.username"}},
		{name: "username with an ampersand", mutate: func(n *Node) { n.Spec.Credentials.Username = "dev&id" },
			want: []string{"FieldValueInvalid spec.credentials.username"}},
		{name: "username that reads as an option", mutate: func(n *Node) { n.Spec.Credentials.Username = "-oProxyCommand=id" },
			want: []string{"FieldValueInvalid spec.credentials.username"}},
		{name: "username domain forms are valid", mutate: func(n *Node) {
			for _, u := range []string{`CORP\dev`, "dev@corp.example", "Администратор", "svc$", "John Smith"} {
				n.Spec.Credentials.Username = u
				if errs := ValidateNode(n); len(errs) > 0 {
					panic(u + ": " + errs.ToAggregate().Error())
				}
			}
		}},
		{name: "username forbidden chars", mutate: func(n *Node) { n.Spec.Credentials.Username = "admin;whoami" },
			want: []string{"FieldValueInvalid spec.credentials.username"}},
		{name: "username trailing space", mutate: func(n *Node) { n.Spec.Credentials.Username = "admin " },
			want: []string{"FieldValueInvalid spec.credentials.username"}},
		{name: "username two backslashes", mutate: func(n *Node) { n.Spec.Credentials.Username = `a\b\c` },
			want: []string{"FieldValueInvalid spec.credentials.username"}},
		{name: "username too long", mutate: func(n *Node) { n.Spec.Credentials.Username = strings.Repeat("u", 257) },
			want: []string{"FieldValueTooLong spec.credentials.username"}},
		{name: "private key control char", mutate: func(n *Node) { n.Spec.Credentials.PrivateKey = "key\n" },
			want: []string{"FieldValueInvalid spec.credentials.privateKey"}},
		{name: "password and passwordEnv", mutate: func(n *Node) { n.Spec.Credentials.Password = "s3cret" },
			want: []string{"FieldValueForbidden spec.credentials.password"}},
		{name: "passwordEnv not a name", mutate: func(n *Node) { n.Spec.Credentials.PasswordEnv = "1PASS-WORD" },
			want: []string{"FieldValueInvalid spec.credentials.passwordEnv"}},
		{name: "knownHostsFile and hostKeyPolicy empty: ssh config or defaults fill them", mutate: func(n *Node) {
			n.Spec.Credentials.KnownHostsFile, n.Spec.Credentials.HostKeyPolicy = "", ""
		}},
		{name: "knownHostsFile control char", mutate: func(n *Node) { n.Spec.Credentials.KnownHostsFile = "a\tb" },
			want: []string{"FieldValueInvalid spec.credentials.knownHostsFile"}},
		{name: "hostKeyPolicy unknown", mutate: func(n *Node) { n.Spec.Credentials.HostKeyPolicy = "yolo" },
			want: []string{"FieldValueNotSupported spec.credentials.hostKeyPolicy"}},
		{name: "every hostKeyPolicy valid", mutate: func(n *Node) {
			for _, p := range []HostKeyPolicy{HostKeyPolicyStrict, HostKeyPolicyAcceptNew, HostKeyPolicyInsecure} {
				n.Spec.Credentials.HostKeyPolicy = p
				if errs := ValidateNode(n); len(errs) > 0 {
					panic(errs.ToAggregate().Error())
				}
			}
		}},
		{name: "choco injection", mutate: func(n *Node) { n.Spec.Setup.ChocoPackages = []string{`vim; Remove-Item C:\`} },
			want: []string{"FieldValueInvalid spec.setup.chocoPackages[0]"}},
		{name: "choco leading dash", mutate: func(n *Node) { n.Spec.Setup.ChocoPackages = []string{"vim", "-y"} },
			want: []string{"FieldValueInvalid spec.setup.chocoPackages[1]"}},
		{name: "choco id of 100 characters", mutate: func(n *Node) { n.Spec.Setup.ChocoPackages = []string{strings.Repeat("v", 100)} }},
		{name: "choco id too long", mutate: func(n *Node) { n.Spec.Setup.ChocoPackages = []string{strings.Repeat("v", 101)} },
			want: []string{"FieldValueInvalid spec.setup.chocoPackages[0]"}},
		{name: "choco duplicate", mutate: func(n *Node) { n.Spec.Setup.ChocoPackages = []string{"vim", "VIM"} },
			want: []string{"FieldValueDuplicate spec.setup.chocoPackages[1]"}},
		{name: "authorizedKeys empty entry", mutate: func(n *Node) { n.Spec.Setup.AuthorizedKeys = []string{""} },
			want: []string{"FieldValueRequired spec.setup.authorizedKeys[0]"}},
		{name: "authorizedKeys control char", mutate: func(n *Node) { n.Spec.Setup.AuthorizedKeys = []string{"a\x07"} },
			want: []string{"FieldValueInvalid spec.setup.authorizedKeys[0]"}},
		{name: "provisioner name missing", mutate: func(n *Node) { prov(n, 0).Name = "" },
			want: []string{"FieldValueRequired spec.kubernetes.provisioners[0].name"}},
		{name: "provisioner name injection", mutate: func(n *Node) { prov(n, 0).Name = "kubelet; Stop-Computer" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].name"}},
		{name: "provisioner name with slash", mutate: func(n *Node) { prov(n, 0).Name = "a/b" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].name"}},
		{name: "service name of 256 characters", mutate: func(n *Node) { prov(n, 0).Service = strings.Repeat("s", 256) }},
		{name: "service name too long", mutate: func(n *Node) { prov(n, 0).Service = strings.Repeat("s", 257) },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].service"}},
		{name: "provisioner service injection", mutate: func(n *Node) { prov(n, 0).Service = "containerd & calc" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].service"}},
		{name: "two provisioners of one service", mutate: func(n *Node) { prov(n, 1).Service = prov(n, 0).Name },
			want: nil},
		{name: "provisioner names unique ignoring case", mutate: func(n *Node) { prov(n, 1).Name = "ContainerD" },
			want: []string{"FieldValueDuplicate spec.kubernetes.provisioners[1].name"}},
		{name: "provisioner destinations unique", mutate: func(n *Node) { prov(n, 2).Destination = `c:\K\kubelet.exe` },
			want: []string{"FieldValueDuplicate spec.kubernetes.provisioners[2].destination"}},
		{name: "version control char", mutate: func(n *Node) { prov(n, 0).Version = "1.0\n" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].version"}},
		{name: "sourceURL missing", mutate: func(n *Node) { prov(n, 0).SourceURL = "" },
			want: []string{"FieldValueRequired spec.kubernetes.provisioners[0].sourceURL"}},
		{name: "sourceURL unsupported scheme", mutate: func(n *Node) { prov(n, 0).SourceURL = "ftp://example.com/x.exe" },
			want: []string{"FieldValueNotSupported spec.kubernetes.provisioners[0].sourceURL"}},
		{name: "sourceURL http without host", mutate: func(n *Node) { prov(n, 0).SourceURL = "https:///x.exe" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].sourceURL"}},
		{name: "sourceURL relative file URL", mutate: func(n *Node) { prov(n, 0).SourceURL = "file:x.exe" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].sourceURL"}},
		{name: "sourceURL bad URL", mutate: func(n *Node) { prov(n, 0).SourceURL = "http://[::1" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].sourceURL"}},
		{name: "sourceURL control char", mutate: func(n *Node) { prov(n, 0).SourceURL = "a\rb" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].sourceURL"}},
		{name: "sourceURL Windows drive path is local", mutate: func(n *Node) { prov(n, 0).SourceURL = `C:\src\containerd.exe` }},
		{name: "destination missing", mutate: func(n *Node) { prov(n, 0).Destination = "" },
			want: []string{"FieldValueRequired spec.kubernetes.provisioners[0].destination"}},
		{name: "destination relative", mutate: func(n *Node) { prov(n, 1).Destination = `k\kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination drive relative", mutate: func(n *Node) { prov(n, 1).Destination = `C:kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination forward slashes", mutate: func(n *Node) { prov(n, 1).Destination = `C:/k/kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination UNC", mutate: func(n *Node) { prov(n, 1).Destination = `\\server\share\kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination dotdot", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\..\Windows\kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination dot", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\.\kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination illegal char", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\kube|let.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination second colon", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\a:b.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination control char", mutate: func(n *Node) { prov(n, 1).Destination = "C:\\k\\kube\x01.exe" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination directory", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination drive root", mutate: func(n *Node) { prov(n, 1).Destination = `C:\` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination empty segment", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\\kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination trailing dot", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k.\kubelet.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination reserved name", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\nul.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination console device", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\CONIN$.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination superscript device", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\COM¹.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination direction character", mutate: func(n *Node) { prov(n, 1).Destination = "C:\\k\\kubelet\u202Eexe.txt" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination 8.3 short name", mutate: func(n *Node) { prov(n, 1).Destination = `C:\PROGRA~1\containerd\containerd.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination swdt's own suffix", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\kubelet.exe.swdt-bak` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "destination swdt's staged name", mutate: func(n *Node) { prov(n, 1).Destination = `C:\k\kubelet.exe.swdt-new-1\x.exe` },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].destination"}},
		{name: "sha256 short", mutate: func(n *Node) { prov(n, 0).SHA256 = "abc" },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].sha256"}},
		{name: "sha256 not hex", mutate: func(n *Node) { prov(n, 0).SHA256 = strings.Repeat("g", 64) },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].sha256"}},
		{name: "health check none set", mutate: func(n *Node) { prov(n, 0).HealthChecks = []HealthCheck{{}} },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].healthCheck[0]"}},
		{name: "health check two set", mutate: func(n *Node) {
			prov(n, 0).HealthChecks = []HealthCheck{{NamedPipe: "p", TCPPort: 80}}
		}, want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].healthCheck[0]"}},
		{name: "health check pipe prefix", mutate: func(n *Node) {
			prov(n, 0).HealthChecks = []HealthCheck{{NamedPipe: `\\.\pipe\containerd-containerd`}}
		}, want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].healthCheck[0].namedPipe"}},
		{name: "health check pipe of 256 characters", mutate: func(n *Node) {
			prov(n, 0).HealthChecks = []HealthCheck{{NamedPipe: strings.Repeat("p", 256)}}
		}},
		{name: "health check pipe too long", mutate: func(n *Node) {
			prov(n, 0).HealthChecks = []HealthCheck{{NamedPipe: strings.Repeat("p", 257)}}
		}, want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].healthCheck[0].namedPipe"}},
		{name: "health check port negative", mutate: func(n *Node) { prov(n, 1).HealthChecks[0].TCPPort = -1 },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].healthCheck[0].tcpPort"}},
		{name: "health check port too big", mutate: func(n *Node) { prov(n, 1).HealthChecks[0].TCPPort = 70000 },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].healthCheck[0].tcpPort"}},
		{name: "health check empty command", mutate: func(n *Node) { prov(n, 1).HealthChecks[1].Command = []string{} },
			want: []string{"FieldValueRequired spec.kubernetes.provisioners[1].healthCheck[1].command[0]"}},
		{name: "health check command NUL", mutate: func(n *Node) { prov(n, 1).HealthChecks[1].Command = []string{"a", "b\x00"} },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].healthCheck[1].command[1]"}},
		{name: "register start type", mutate: func(n *Node) { prov(n, 0).Register = &ServiceRegistration{StartType: "Disabled"} },
			want: []string{"FieldValueNotSupported spec.kubernetes.provisioners[0].register.startType"}},
		{name: "register argument with a newline", mutate: func(n *Node) { prov(n, 0).Register = &ServiceRegistration{Args: []string{"ok", "a\nb"}} },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].register.args[1]"}},
		{name: "register dependency name", mutate: func(n *Node) { prov(n, 0).Register = &ServiceRegistration{DependsOn: []string{"no spaces"}} },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].register.dependsOn[0]"}},
		{name: "service None with register", mutate: func(n *Node) {
			prov(n, 0).Service, prov(n, 0).HealthChecks, prov(n, 0).Register = "none", nil, &ServiceRegistration{}
		}, want: []string{"FieldValueInvalid spec.kubernetes.provisioners[0].register"}},
		{name: "service None with a health check", mutate: func(n *Node) { prov(n, 1).Service = NoService },
			want: []string{"FieldValueInvalid spec.kubernetes.provisioners[1].healthCheck"}},
		{name: "wins source missing", mutate: func(n *Node) { n.Spec.Wins.SourceURL = "" },
			want: []string{"FieldValueRequired spec.wins.sourceURL"}},
		{name: "wins destination relative", mutate: func(n *Node) { n.Spec.Wins.Destination = "wins.exe" },
			want: []string{"FieldValueInvalid spec.wins.destination"}},
		{name: "wins sha256", mutate: func(n *Node) { n.Spec.Wins.SHA256 = "xyz" },
			want: []string{"FieldValueInvalid spec.wins.sha256"}},
		{name: "wins process path relative", mutate: func(n *Node) { n.Spec.Wins.WhiteList.ProcessPaths = []string{"smoke.exe"} },
			want: []string{"FieldValueInvalid spec.wins.whiteList.processPaths[0]"}},
		{name: "wins proxy port", mutate: func(n *Node) { n.Spec.Wins.WhiteList.ProxyPorts = []int32{80, 0} },
			want: []string{"FieldValueInvalid spec.wins.whiteList.proxyPorts[1]"}},
		{name: "wins release", mutate: func(n *Node) { n.Spec.Wins.SourceURL, n.Spec.Wins.Version = "release:wins", DefaultWinsRelease }},
		{name: "wins release without the bridge", mutate: func(n *Node) { n.Spec.Wins.SourceURL, n.Spec.Wins.Version = "release:wins", "v0.16.0" },
			want: []string{"FieldValueInvalid spec.wins.version"}},
		{name: "wins release without checksums or sha256", mutate: func(n *Node) {
			n.Spec.Wins.SourceURL, n.Spec.Wins.Version, n.Spec.Wins.SHA256 = "release:wins", "v0.4.15", ""
		}, want: []string{"FieldValueRequired spec.wins.sha256"}},
		{name: "wins release of another kind", mutate: func(n *Node) { n.Spec.Wins.SourceURL, n.Spec.Wins.Version = "release:kubernetes", "v1.37.2" },
			want: []string{"FieldValueNotSupported spec.wins.sourceURL"}},
		{name: "wins release version", mutate: func(n *Node) { n.Spec.Wins.SourceURL, n.Spec.Wins.Version = "release:wins", "latest" },
			want: []string{"FieldValueInvalid spec.wins.version"}},
		{name: "wins version without a release", mutate: func(n *Node) { n.Spec.Wins.Version = "v0.15.0" },
			want: []string{"FieldValueInvalid spec.wins.version"}},
		{name: "every problem at once", mutate: func(n *Node) {
			n.Spec.Credentials.HostKeyPolicy = "nope"
			prov(n, 0).Destination = `bin\containerd.exe`
			n.Spec.Setup.ChocoPackages = []string{"vim&&calc"}
		}, want: []string{
			"FieldValueNotSupported spec.credentials.hostKeyPolicy",
			"FieldValueInvalid spec.setup.chocoPackages[0]",
			"FieldValueInvalid spec.kubernetes.provisioners[0].destination",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := validNode()
			tt.mutate(n)
			got := summarize(ValidateNode(n))
			if !slices.Equal(got, tt.want) {
				t.Errorf("ValidateNode() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidateNodeNeverPrintsPassword(t *testing.T) {
	n := validNode()
	n.Spec.Credentials.Password = "hunter2-secret"
	errs := ValidateNode(n)
	if len(errs) != 1 {
		t.Fatalf("want one error, got %v", errs)
	}
	if strings.Contains(errs.ToAggregate().Error(), "hunter2") {
		t.Errorf("error leaks the password: %v", errs)
	}
}

// A sourceURL's user and password never appear in a validation error.
func TestValidateNodeNeverPrintsURLCredentials(t *testing.T) {
	for _, bad := range []string{
		"https://alice:s3cr3t@/x.exe",             // no host
		"http://alice:s3cr3t@[::1/x.exe",          // not a URL
		"https://alice:s3cr3t@host/x\rexe",        // a control character
		"file://alice:s3cr3t@",                    // not absolute
		"ftp://alice:s3cr3t@example.com/x.exe",    // unsupported scheme
		"https://alice:s3/cr3t@example.com/x.exe", // an unescaped / in the password
	} {
		bad = strings.ReplaceAll(bad, `\r`, "\r")
		n := validNode()
		n.Spec.Kubernetes.Provisioners[0].SourceURL = bad
		n.Spec.Wins.SourceURL = bad
		errs := ValidateNode(n)
		if len(errs) != 2 {
			t.Errorf("%q: want two errors, got %v", bad, errs)
		}
		for _, secret := range []string{"alice", "s3cr3t", "cr3t"} {
			if msg := errs.ToAggregate().Error(); strings.Contains(msg, secret) {
				t.Errorf("%q: the error shows %q: %s", bad, secret, msg)
			}
		}
	}
}

func summarize(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestIsLocalPathSource(t *testing.T) {
	for s, want := range map[string]bool{
		"":                         false,
		"./bin/kubelet.exe":        true,
		"~/bin/kubelet.exe":        true,
		"/abs/kubelet.exe":         true,
		`C:\src\kubelet.exe`:       true,
		"file:///abs/kubelet.exe":  false,
		"https://example.com/x":    false,
		"HTTP://example.com/x":     false,
		"weird:name/kubelet.exe":   false,
		"dir/with:colon/kubelet.e": true,
	} {
		if got := IsLocalPathSource(s); got != want {
			t.Errorf("IsLocalPathSource(%q) = %v, want %v", s, got, want)
		}
	}
}
