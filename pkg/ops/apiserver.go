package ops

// APIServerProbe connects, from the node, to the API server address its
// kubelet will use: a TCP connection, then a TLS handshake that must
// verify the server's certificate against the cluster CA for the URL's
// host name. A join runs it before it creates a token or writes a file.
var APIServerProbe = register[APIServerProbeRequest, APIServerProbeResponse]("apiserver-probe")

// The kinds of a failed APIServerProbe (besides KindBadRequest for a
// request it cannot use and KindTimeout for a connection or handshake
// that did not finish in time).
const (
	// KindConnectionRefused: nothing listens at the address (on the
	// node's own loopback, when the address is 127.0.0.1).
	KindConnectionRefused Kind = "connection-refused"
	// KindUnreachable: the node has no route to the address, or cannot
	// resolve its name.
	KindUnreachable Kind = "unreachable"
	// KindCertificateName: the server's certificate is not valid for the
	// name or address the node dialled.
	KindCertificateName Kind = "certificate-name"
	// KindUnknownAuthority: the server's certificate is not signed by
	// the cluster CA (another server, or another cluster).
	KindUnknownAuthority Kind = "unknown-authority"
	// KindTLS: the TLS handshake failed otherwise (not a TLS server, an
	// expired certificate).
	KindTLS Kind = "tls"
)

// APIServerProbeDefaultTimeout and APIServerProbeMaxTimeout bound a
// probe, in milliseconds: its connection and handshake together.
const (
	APIServerProbeDefaultTimeout = 10_000
	APIServerProbeMaxTimeout     = 60_000
)

// APIServerProbeRequest names the API server as the node reaches it.
type APIServerProbeRequest struct {
	// Server is the API server's URL, https://host:port.
	Server string `json:"server"`
	// CA is the cluster CA bundle (PEM) the server's certificate must
	// chain to.
	CA string `json:"ca"`
	// TimeoutMillis bounds the probe (default
	// APIServerProbeDefaultTimeout, at most APIServerProbeMaxTimeout).
	TimeoutMillis int `json:"timeoutMillis,omitempty"`
}

// APIServerProbeResponse is a probe that got through.
type APIServerProbeResponse struct {
	// Address is the address the node connected to, ip:port.
	Address string `json:"address"`
	// TLSVersion is the negotiated TLS version, e.g. TLS 1.3.
	TLSVersion string `json:"tlsVersion"`
}
