package daytwo

import (
	"net"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

func TestParsePorts(t *testing.T) {
	tests := []struct {
		args []string
		want []PortSpec
		err  string
	}{
		{args: []string{"10250"}, want: []PortSpec{{Local: 10250, Remote: 10250}}},
		{args: []string{"8080:80", ":6060", "0:22"}, want: []PortSpec{{Local: 8080, Remote: 80}, {Remote: 6060}, {Remote: 22}}},
		{err: "name at least one port"},
		{args: []string{"http"}, err: `port "http": "http" is not a port number`},
		{args: []string{"80:"}, err: `port "80:": "" is not a port number`},
		{args: []string{"1:0"}, err: `"0" is not a port number`},
		{args: []string{"65536"}, err: `"65536" is not a port number`},
		{args: []string{"-1:80"}, err: `"-1" is not a port number`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			got, err := ParsePorts(tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || exitcode.Code(err) != exitcode.Usage {
					t.Fatalf("error %v (exit %d), want %q (usage)", err, exitcode.Code(err), tt.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParsePorts = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestBeyondLoopback(t *testing.T) {
	for _, tt := range []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", false},
		{"127.0.0.2:8080", false},
		{"[::1]:8080", false},
		{"0.0.0.0:8080", true},
		{"[::]:8080", true},
		{"192.0.2.10:8080", true},
	} {
		a, err := net.ResolveTCPAddr("tcp", tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := beyondLoopback(a); got != tt.want {
			t.Errorf("beyondLoopback(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}
