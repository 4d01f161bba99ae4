package agent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

func TestClassifyProbe(t *testing.T) {
	cert := &x509.Certificate{DNSNames: []string{"kind-control-plane"}}
	for _, tc := range []struct {
		name string
		err  error
		kind ops.Kind
		why  string
	}{
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, ops.KindConnectionRefused, "connection refused"},
		{"no route", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, ops.KindUnreachable, "unreachable"},
		{"unknown name", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "kind-control-plane", IsNotFound: true}}, ops.KindUnreachable, "no such host"},
		{"deadline", fmt.Errorf("dial: %w", context.DeadlineExceeded), ops.KindTimeout, "timed out"},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, ops.KindTimeout, "timed out"},
		{"wrong name", &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: cert, Host: "127.0.0.1"}}, ops.KindCertificateName, "not valid for that name"},
		{"other CA", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{Cert: cert}}, ops.KindUnknownAuthority, "unknown authority"},
		{"expired", &tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Cert: cert, Reason: x509.Expired}}, ops.KindTLS, "not valid"},
		{"not TLS", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, ops.KindTLS, "does not speak TLS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, why := classifyProbe(tc.err)
			if kind != tc.kind || !strings.Contains(why, tc.why) {
				t.Fatalf("classifyProbe = %s, %q; want %s, %q", kind, why, tc.kind, tc.why)
			}
		})
	}
}

// The probe against real listeners: a TLS server whose certificate names
// 127.0.0.1 and example.com, a port nobody listens on, and a listener
// that never answers the handshake.
func TestAPIServerProbe(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	ca := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	otherCA := selfSigned(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	for _, tc := range []struct {
		name    string
		req     ops.APIServerProbeRequest
		kind    ops.Kind
		message string
	}{
		{name: "verified", req: ops.APIServerProbeRequest{Server: srv.URL, CA: ca}},
		{name: "a name the certificate lacks", req: ops.APIServerProbeRequest{Server: "https://localhost:" + port, CA: ca},
			kind: ops.KindCertificateName, message: "not valid for that name"},
		{name: "another cluster's CA", req: ops.APIServerProbeRequest{Server: srv.URL, CA: otherCA},
			kind: ops.KindUnknownAuthority, message: "unknown authority"},
		{name: "nothing listens", req: ops.APIServerProbeRequest{Server: "https://" + closedAddr, CA: ca},
			kind: ops.KindConnectionRefused, message: "connect to " + closedAddr + ": connection refused"},
		{name: "no handshake", req: ops.APIServerProbeRequest{Server: "https://" + silent.Addr().String(), CA: ca, TimeoutMillis: 300},
			kind: ops.KindTimeout, message: "timed out"},
		{name: "not https", req: ops.APIServerProbeRequest{Server: "http://" + closedAddr, CA: ca}, kind: ops.KindBadRequest},
		{name: "no CA", req: ops.APIServerProbeRequest{Server: srv.URL}, kind: ops.KindBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := apiServerProbe(context.Background(), nil, tc.req)
			if tc.kind == "" {
				if err != nil || resp.Address != srv.Listener.Addr().String() || resp.TLSVersion == "" {
					t.Fatalf("probe = %+v, %v", resp, err)
				}
				return
			}
			var f *Failure
			if !errors.As(err, &f) || f.Kind != tc.kind || !strings.Contains(f.Message, tc.message) {
				t.Fatalf("probe error %v, want kind %s saying %q", err, tc.kind, tc.message)
			}
		})
	}
}

// selfSigned is the PEM of a new CA certificate: another cluster's.
func selfSigned(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "other-cluster"},
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
