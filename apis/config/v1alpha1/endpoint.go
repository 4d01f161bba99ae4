package v1alpha1

import (
	"net"
	"net/url"
	"strconv"
	"strings"
)

// APIServerURL is the URL of spec.kubernetes.join.apiServerEndpoint:
// host:port or https://host:port (an IPv6 host in brackets), without a
// path, query or credentials; https://host means port 443, as for any
// https URL.
func APIServerURL(endpoint string) (string, error) {
	if hasControl(endpoint) || strings.ContainsAny(endpoint, " \t") {
		return "", errString("must not contain spaces or control characters")
	}
	raw := endpoint
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return "", errString("must be host:port or https://host:port, for example 192.168.122.1:6443")
	case u.Scheme != "https":
		return "", errString("the API server speaks https: give host:port or https://host:port")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return "", errString("must be host:port or https://host:port, without credentials, a path or a query")
	case u.Hostname() == "":
		return "", errString("has no host: give host:port, for example 192.168.122.1:6443")
	}
	port := u.Port()
	switch {
	case port == "" && !strings.Contains(endpoint, "://"):
		return "", errString("has no port: give host:port, for example " + net.JoinHostPort(u.Hostname(), "6443"))
	case port == "":
		port = "443"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", errString("the port must be a number from 1 to 65535")
	}
	return "https://" + net.JoinHostPort(u.Hostname(), port), nil
}
