package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/url"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// probeOps checks, from the node, what the node's programs will need of
// the network.
var probeOps = []entry{
	handle(ops.APIServerProbe, apiServerProbe),
}

// apiServerProbe dials the API server as the kubelet will: a TCP
// connection from this machine, then a TLS handshake that verifies the
// certificate against the cluster CA for the URL's host. Plain Go
// networking: nothing here is Windows-specific, and nothing of the
// request reaches a command line.
func apiServerProbe(ctx context.Context, _ winos.OS, req ops.APIServerProbeRequest) (ops.APIServerProbeResponse, error) {
	var resp ops.APIServerProbeResponse
	u, err := url.Parse(req.Server)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return resp, Fail(ops.KindBadRequest, "server %q is not an https://host:port URL", req.Server)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(req.CA)) {
		return resp, Fail(ops.KindBadRequest, "the cluster CA holds no PEM certificate")
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	switch {
	case req.TimeoutMillis <= 0:
		timeout = ops.APIServerProbeDefaultTimeout * time.Millisecond
	case req.TimeoutMillis > ops.APIServerProbeMaxTimeout:
		timeout = ops.APIServerProbeMaxTimeout * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(u.Hostname(), port)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		kind, why := classifyProbe(err)
		return resp, Fail(kind, "connect to %s: %s", addr, why)
	}
	defer conn.Close()
	resp.Address = conn.RemoteAddr().String()
	tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: u.Hostname(), MinVersion: tls.VersionTLS12})
	if err := tc.HandshakeContext(ctx); err != nil {
		kind, why := classifyProbe(err)
		return resp, Fail(kind, "TLS handshake with %s (from %s): %s", u.Hostname(), resp.Address, why)
	}
	resp.TLSVersion = tls.VersionName(tc.ConnectionState().Version)
	return resp, nil
}

// classifyProbe is the kind of a failed connection or handshake, and
// why it failed in words.
func classifyProbe(err error) (ops.Kind, string) {
	var (
		hostErr  x509.HostnameError
		authErr  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		dnsErr   *net.DNSError
		netErr   net.Error
		recordEr tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &hostErr):
		return ops.KindCertificateName, "the certificate is not valid for that name: " + hostErr.Error()
	case errors.As(err, &authErr):
		return ops.KindUnknownAuthority, "the certificate is signed by an unknown authority, not the cluster CA: " + authErr.Error()
	case errors.As(err, &invalid):
		return ops.KindTLS, "the certificate is not valid: " + invalid.Error()
	case errors.As(err, &recordEr):
		return ops.KindTLS, "the server does not speak TLS: " + recordEr.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return ops.KindTimeout, "timed out: " + err.Error()
	case errnoRefused(err):
		return ops.KindConnectionRefused, "connection refused: " + err.Error()
	case errnoUnreachable(err), errors.As(err, &dnsErr):
		return ops.KindUnreachable, "unreachable: " + err.Error()
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return ops.KindUnreachable, err.Error()
	}
	return ops.KindTLS, err.Error()
}
