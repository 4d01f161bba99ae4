package remote

import (
	"slices"
	"strings"

	"github.com/kevinburke/ssh_config"
)

// supportedDirectives are the ssh config keywords swdt honours, besides
// Host, Match and Include, which the parser handles. The ssh_config
// section of docs/node-file.md lists them too: change both together.
var supportedDirectives = []string{
	"HostName", "Port", "User", "IdentityFile", "ProxyJump", "ProxyCommand",
	"UserKnownHostsFile", "StrictHostKeyChecking",
}

// quietDirectives only concern interactive ssh sessions or features swdt
// never uses (agent and X11 forwarding, connection sharing, key storage);
// setting them changes nothing swdt does, so they are ignored without a
// warning.
var quietDirectives = []string{
	"AddKeysToAgent", "UseKeychain", "IgnoreUnknown", "LogLevel", "VisualHostKey",
	"ForwardAgent", "ForwardX11", "ForwardX11Trusted", "ForwardX11Timeout", "RequestTTY",
	"ControlMaster", "ControlPath", "ControlPersist",
	"ServerAliveInterval", "ServerAliveCountMax",
}

// sshKeywords are OpenSSH's client keywords (ssh_config(5)). The parser
// does not list what an Include'd file sets, so those are found by asking
// for each of these.
var sshKeywords = []string{
	"AddKeysToAgent", "AddressFamily", "BatchMode", "BindAddress", "BindInterface",
	"CanonicalDomains", "CanonicalizeFallbackLocal", "CanonicalizeHostname",
	"CanonicalizeMaxDots", "CanonicalizePermittedCNAMEs", "CASignatureAlgorithms",
	"CertificateFile", "ChannelTimeout", "CheckHostIP", "Ciphers", "ClearAllForwardings",
	"Compression", "ConnectionAttempts", "ConnectTimeout", "ControlMaster", "ControlPath",
	"ControlPersist", "DynamicForward", "EnableEscapeCommandline", "EnableSSHKeysign",
	"EscapeChar", "ExitOnForwardFailure", "FingerprintHash", "ForkAfterAuthentication",
	"ForwardAgent", "ForwardX11", "ForwardX11Timeout", "ForwardX11Trusted", "GatewayPorts",
	"GlobalKnownHostsFile", "GSSAPIAuthentication", "GSSAPIDelegateCredentials",
	"HashKnownHosts", "HostbasedAcceptedAlgorithms", "HostbasedAuthentication",
	"HostKeyAlgorithms", "HostKeyAlias", "HostName", "IdentitiesOnly", "IdentityAgent",
	"IdentityFile", "IgnoreUnknown", "IPQoS", "KbdInteractiveAuthentication",
	"KbdInteractiveDevices", "KexAlgorithms", "KnownHostsCommand", "LocalCommand",
	"LocalForward", "LogLevel", "LogVerbose", "MACs", "NoHostAuthenticationForLocalhost",
	"NumberOfPasswordPrompts", "ObscureKeystrokeTiming", "PasswordAuthentication",
	"PermitLocalCommand", "PermitRemoteOpen", "PKCS11Provider", "Port",
	"PreferredAuthentications", "ProxyCommand", "ProxyJump", "ProxyUseFdpass",
	"PubkeyAcceptedAlgorithms", "PubkeyAcceptedKeyTypes", "PubkeyAuthentication",
	"RekeyLimit", "RemoteCommand", "RemoteForward", "RequestTTY", "RequiredRSASize",
	"RevokedHostKeys", "SecurityKeyProvider", "SendEnv", "ServerAliveCountMax",
	"ServerAliveInterval", "SessionType", "SetEnv", "StdinNull", "StreamLocalBindMask",
	"StreamLocalBindUnlink", "StrictHostKeyChecking", "SyslogFacility", "Tag",
	"TCPKeepAlive", "Tunnel", "TunnelDevice", "UpdateHostKeys", "UseKeychain", "User",
	"UserKnownHostsFile", "VerifyHostKeyDNS", "VisualHostKey", "XAuthLocation",
}

// unsupported lists, in file order, the directives set for alias that
// swdt neither honours nor may quietly ignore.
func (sc *sshConfig) unsupported(alias string) []string {
	if sc == nil {
		return nil
	}
	var out []string
	add := func(key string) {
		if containsFold(supportedDirectives, key) || containsFold(quietDirectives, key) || containsFold(out, key) {
			return
		}
		out = append(out, key)
	}
	for _, h := range sc.c.Hosts {
		if !h.Matches(alias) {
			continue
		}
		for _, n := range h.Nodes {
			switch n := n.(type) {
			case *ssh_config.KV:
				add(n.Key)
			case *ssh_config.Include:
				for _, k := range sshKeywords {
					if n.Get(alias, k) != "" {
						add(k)
					}
				}
			}
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	return slices.ContainsFunc(list, func(e string) bool { return strings.EqualFold(e, s) })
}
