package sshname

import "testing"

func TestHost(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"10.0.0.5", true},
		{"winnode.example.com", true},
		{"fe80::1%eth0", true},
		{"win_node-1", true},
		{"x|touch${IFS}PWNED", false},
		{"host;reboot", false},
		{"$(id)", false},
		{"`id`", false},
		{"a&b", false},
		{"a>b", false},
		{"a<b", false},
		{"a'b", false},
		{`a"b`, false},
		{`a\b`, false},
		{"a,b", false},
		{"a{b}", false},
		{"-oProxyCommand=id", false},
		{"a b", false},
		{"a\tb", false},
		{"a\x1b[31m", false},
		{"", false},
	}
	for _, tt := range tests {
		if err := Host(tt.in); (err == nil) != tt.ok {
			t.Errorf("Host(%q) = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

func TestUser(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"Administrator", true},
		{`CORP\admin`, true},
		{"admin@corp.example", true},
		{"Jane Doe", true},
		{"svc$", true},
		{"admin;id", false},
		{"admin|id", false},
		{"$(id)", false},
		{"a`id`", false},
		{"a'b", false},
		{"-oProxyCommand=id", false},
		{"a -b", false},
		{`admin\`, false},
		{"admin\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if err := User(tt.in); (err == nil) != tt.ok {
			t.Errorf("User(%q) = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

func TestPort(t *testing.T) {
	for in, ok := range map[string]bool{"22": true, "65535": true, "1": true, "0": false, "65536": false, "+22": false, "22;id": false, "": false, "ssh": false} {
		if err := Port(in); (err == nil) != ok {
			t.Errorf("Port(%q) = %v, want ok %v", in, err, ok)
		}
	}
}
