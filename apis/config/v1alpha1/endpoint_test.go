package v1alpha1

import (
	"strings"
	"testing"
)

func TestAPIServerURL(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{in: "192.168.122.1:6443", want: "https://192.168.122.1:6443"},
		{in: "https://192.168.122.1:6443", want: "https://192.168.122.1:6443"},
		{in: "https://cp.example.com:6443/", want: "https://cp.example.com:6443"},
		{in: "https://cp.example.com", want: "https://cp.example.com:443"},
		{in: "[fd00::1]:6443", want: "https://[fd00::1]:6443"},
		{in: "https://[fd00::1]:6443", want: "https://[fd00::1]:6443"},
		{in: "cp.example.com", err: "has no port"},
		{in: "http://cp.example.com:6443", err: "speaks https"},
		{in: "https://user:pw@cp.example.com:6443", err: "without credentials"},
		{in: "https://cp.example.com:6443/api", err: "without credentials, a path"},
		{in: "cp.example.com:0", err: "from 1 to 65535"},
		{in: "cp.example.com:http", err: "host:port"},
		{in: ":6443", err: "has no host"},
		{in: "cp example:6443", err: "spaces"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := APIServerURL(tc.in)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("APIServerURL(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.err)
			case tc.err == "" && (err != nil || got != tc.want):
				t.Fatalf("APIServerURL(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}
