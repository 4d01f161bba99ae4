package winos

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
)

func TestEncodeCommand(t *testing.T) {
	tests := []struct {
		source, want string
	}{
		{"", ""},
		{"dir", "ZABpAHIA"},
		{"é", "6QA="},
		{"😀", "PdgA3g=="}, // a surrogate pair: D83D DE00
	}
	for _, tt := range tests {
		if got := encodeCommand(tt.source); got != tt.want {
			t.Errorf("encodeCommand(%q) = %q, want %q", tt.source, got, tt.want)
		}
	}
}

// TestPowershellArgsCarryEveryScript checks the fixed flags and that each
// embedded script survives the encoding unchanged.
func TestPowershellArgsCarryEveryScript(t *testing.T) {
	for _, s := range Scripts() {
		args := powershellArgs(s.Source())
		want := []string{"-NoLogo", "-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-EncodedCommand"}
		if !reflect.DeepEqual(args[:len(args)-1], want) {
			t.Fatalf("%s: args = %q, want %q then the script", s.Name(), args, want)
		}
		raw, err := base64.StdEncoding.DecodeString(args[len(args)-1])
		if err != nil || len(raw)%2 != 0 {
			t.Fatalf("%s: encoded script is not base64 of UTF-16: %v", s.Name(), err)
		}
		units := make([]uint16, len(raw)/2)
		for i := range units {
			units[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
		if got := string(utf16.Decode(units)); got != s.Source() {
			t.Errorf("%s: decoded script differs from its source", s.Name())
		}
	}
}

func TestResolveProgram(t *testing.T) {
	const sys = `C:\Windows\system32`
	tests := []struct {
		path, want string
	}{
		{"hostname.exe", `C:\Windows\system32\hostname.exe`},
		{"icacls", `C:\Windows\system32\icacls`},
		{`C:\k\wins.exe`, `C:\k\wins.exe`},
		{`C:/k/wins.exe`, `C:/k/wins.exe`},
		{`bin\tool.exe`, `bin\tool.exe`},
		{`C:tool.exe`, `C:tool.exe`},
		{"", ""},
	}
	for _, tt := range tests {
		if got := resolveProgram(tt.path, sys); got != tt.want {
			t.Errorf("resolveProgram(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if got := resolveProgram("a.exe", sys+`\`); got != sys+`\a.exe` {
		t.Errorf("a trailing separator is doubled: %q", got)
	}
}

func TestLimitedBufferKeepsTheStartAndDrainsTheRest(t *testing.T) {
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"nothing", 4, nil, ""},
		{"under", 4, []string{"ab"}, "ab"},
		{"exact", 4, []string{"ab", "cd"}, "abcd"},
		{"over in one write", 4, []string{"abcdef"}, "abcd"},
		{"over across writes", 4, []string{"abc", "def", "ghi"}, "abcd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &limitedBuffer{max: tt.max}
			for _, w := range tt.writes {
				n, err := b.Write([]byte(w))
				if n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil so the pipe keeps draining", w, n, err, len(w))
				}
			}
			if got := string(b.Bytes()); got != tt.want {
				t.Errorf("kept %q, want %q", got, tt.want)
			}
			if tt.want == "" && b.Bytes() != nil {
				t.Errorf("Bytes() = %q, want nil", b.Bytes())
			}
		})
	}
}

// tcpTable lays rows out as GetExtendedTcpTable does: a little-endian
// row count, then rows with the port in network byte order at off.
func tcpTable(rowSize, off int, ports ...uint16) []byte {
	b := make([]byte, 4+len(ports)*rowSize)
	binary.LittleEndian.PutUint32(b, uint32(len(ports)))
	for i, p := range ports {
		row := b[4+i*rowSize:]
		for j := range rowSize {
			row[j] = 0xAA // other fields must not leak into the port
		}
		binary.BigEndian.PutUint16(row[off:], p)
		row[off+2], row[off+3] = 0, 0
	}
	return b
}

func TestTCPTablePorts(t *testing.T) {
	tests := []struct {
		name      string
		table     []byte
		row, off  int
		want      []int
		wantError bool
	}{
		{"IPv4", tcpTable(tcpRowSize, tcpRowPortOffset, 443, 10250, 9), tcpRowSize, tcpRowPortOffset, []int{443, 10250, 9}, false},
		{"IPv6", tcpTable(tcp6RowSize, tcp6RowPortOff, 22, 65535), tcp6RowSize, tcp6RowPortOff, []int{22, 65535}, false},
		{"empty", tcpTable(tcpRowSize, tcpRowPortOffset), tcpRowSize, tcpRowPortOffset, []int{}, false},
		{"spare room after the rows", append(tcpTable(tcpRowSize, tcpRowPortOffset, 80), make([]byte, 100)...), tcpRowSize, tcpRowPortOffset, []int{80}, false},
		{"no count", []byte{1, 0}, tcpRowSize, tcpRowPortOffset, nil, true},
		{"count beyond the buffer", tcpTable(tcpRowSize, tcpRowPortOffset, 80, 81)[:4+tcpRowSize], tcpRowSize, tcpRowPortOffset, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tcpTablePorts(tt.table, tt.row, tt.off)
			if (err != nil) != tt.wantError {
				t.Fatalf("error = %v, want error %v", err, tt.wantError)
			}
			if !tt.wantError && !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ports = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFileVersionKeys(t *testing.T) {
	key := func(page string) string { return `\StringFileInfo\` + page + `\FileVersion` }
	tests := []struct {
		name        string
		translation []byte
		want        []string
	}{
		{"no translation", nil, []string{key("040904B0"), key("040904E4"), key("04090000")}},
		{"German, Unicode", []byte{0x07, 0x04, 0xB0, 0x04}, []string{key("040704B0"), key("040904B0"), key("040904E4"), key("04090000")}},
		{"same as a fallback", []byte{0x09, 0x04, 0xE4, 0x04}, []string{key("040904E4"), key("040904B0"), key("04090000")}},
		{"second pair ignored", []byte{0x09, 0x04, 0x00, 0x00, 0x07, 0x04, 0xB0, 0x04}, []string{key("04090000"), key("040904B0"), key("040904E4")}},
		{"short", []byte{0x09, 0x04}, []string{key("040904B0"), key("040904E4"), key("04090000")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fileVersionKeys(tt.translation); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("keys = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestNoVersionResource(t *testing.T) {
	tests := []struct {
		code Errno
		want bool
	}{
		{1813, true}, // ERROR_RESOURCE_TYPE_NOT_FOUND
		{1812, true}, // ERROR_RESOURCE_DATA_NOT_FOUND
		{ErrBadExeFormat, true},
		{ErrFileNotFound, false},
		{ErrAccessDenied, false},
		{ErrSharingViolation, false},
	}
	for _, tt := range tests {
		if got := noVersionResource(tt.code); got != tt.want {
			t.Errorf("noVersionResource(%d) = %v, want %v", tt.code, got, tt.want)
		}
	}
}

func TestServiceControlManagerUnits(t *testing.T) {
	tests := []struct {
		name string
		got  uint32
		want uint32
	}{
		{"delay", scMilliseconds(1500 * time.Millisecond), 1500},
		{"delay below a millisecond", scMilliseconds(time.Microsecond), 0},
		{"negative delay", scMilliseconds(-time.Second), 0},
		{"delay beyond a DWORD", scMilliseconds(100 * 24 * time.Hour), math.MaxUint32},
		{"reset period", scSeconds(24 * time.Hour), 86400},
		{"reset period rounds down", scSeconds(1999 * time.Millisecond), 1},
		{"infinite reset period", scSeconds(time.Duration(math.MaxUint32) * time.Second), math.MaxUint32},
		{"reset period beyond a DWORD", scSeconds(time.Duration(math.MaxInt64)), math.MaxUint32},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}

func TestScriptInputs(t *testing.T) {
	since := time.Date(2026, 5, 4, 3, 2, 1, 999_000_000, time.FixedZone("CEST", 2*3600))
	tests := []struct {
		name string
		got  []byte
		want string
	}{
		{"firewall rules", scriptInput(firewallRulesInput{Names: nonNil([]string{"a", "b"})}), `{"names":["a","b"]}`},
		{"no rule names", scriptInput(firewallRulesInput{Names: nonNil(nil)}), `{"names":[]}`},
		{"firewall set", scriptInput(firewallSetInput{Names: nonNil([]string{"a"}), Enabled: true}), `{"names":["a"],"enabled":true}`},
		{"events", eventsInput("rancher-wins", "Rancher Wins", since, 5), `{"names":["rancher-wins","Rancher Wins"],"since":"2026-05-04T01:02:01Z","max":5}`},
		{"events without a display name", eventsInput("kubelet", "", since, 3), `{"names":["kubelet"],"since":"2026-05-04T01:02:01Z","max":3}`},
		{"events, display name as name", eventsInput("kubelet", "KubeLet", since, 3), `{"names":["kubelet"],"since":"2026-05-04T01:02:01Z","max":3}`},
		{"data stays data", scriptInput(firewallRulesInput{Names: []string{`x"; Remove-Item C:\ -Recurse; "`}}), `{"names":["x\"; Remove-Item C:\\ -Recurse; \""]}`},
	}
	for _, tt := range tests {
		if string(tt.got) != tt.want {
			t.Errorf("%s: input = %s, want %s", tt.name, tt.got, tt.want)
		}
	}
}

// A script's input reaches powershell.exe in ASCII, so that the
// console's code page cannot alter it, and decodes to the same JSON.
func TestScriptStdin(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"ASCII unchanged", `{"names":["a b","\"q\""]}`, `{"names":["a b","\"q\""]}`},
		{"accents", `{"names":["Dienst für Überwachung"]}`, `{"names":["Dienst f\u00fcr \u00dcberwachung"]}`},
		{"CJK", `{"name":"虚拟机"}`, `{"name":"\u865a\u62df\u673a"}`},
		{"beyond the BMP", `{"name":"vm😀"}`, `{"name":"vm\ud83d\ude00"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scriptStdin([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("scriptStdin = %s, want %s", got, tt.want)
			}
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.in), &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("decodes to %v, want %v", a, b)
			}
		})
	}
}

func TestFirewallRulesOutput(t *testing.T) {
	names := []string{"KubeletIn", "Missing"}
	want := []FirewallRule{{Name: "KubeletIn", Exists: true, Enabled: true}, {Name: "Missing"}}
	out := `[{"name":"KubeletIn","exists":true,"enabled":true},{"name":"Missing","exists":false,"enabled":false}]`
	tests := []struct {
		name      string
		res       Result
		want      []FirewallRule
		wantError string
	}{
		{"rules", Result{Stdout: []byte(out + "\r\n")}, want, ""},
		{"byte order mark", Result{Stdout: []byte("\xef\xbb\xbf" + out)}, want, ""},
		{"script failed", Result{ExitCode: 1, Stderr: []byte("Get-NetFirewallRule : Access is denied.\r\n")}, nil, "exited with code 1: Get-NetFirewallRule : Access is denied."},
		{"one rule short", Result{Stdout: []byte(`[{"name":"KubeletIn","exists":true,"enabled":true}]`)}, nil, "returned 1 rules for 2 names"},
		{"not JSON", Result{Stdout: []byte("WARNING: something")}, nil, "printed no valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := firewallRules(tt.res, names)
			if tt.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantError) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantError)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("rules = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestServiceEventsOutput(t *testing.T) {
	tests := []struct {
		name      string
		res       Result
		want      []string
		wantError string
	}{
		{"events", Result{Stdout: []byte(`["2026-05-04T01:02:03.0000000Z The rancher-wins service terminated unexpectedly."]`)},
			[]string{"2026-05-04T01:02:03.0000000Z The rancher-wins service terminated unexpectedly."}, ""},
		{"none", Result{Stdout: []byte("[]")}, []string{}, ""},
		{"null", Result{Stdout: []byte("null")}, []string{}, ""},
		{"script failed", Result{ExitCode: 1, Stderr: bytes.Repeat([]byte("x"), 3*maxScriptError)}, nil, "exited with code 1: " + strings.Repeat("x", maxScriptError)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := serviceEvents(tt.res)
			if tt.wantError != "" {
				if err == nil || !strings.HasSuffix(err.Error(), tt.wantError) {
					t.Fatalf("error = %v, want one ending in %q", err, tt.wantError)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("events = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestScriptFailureOnlyOnNonZeroExit(t *testing.T) {
	if err := scriptFailure(ScriptFirewallSet, Result{Stderr: []byte("a warning")}); err != nil {
		t.Errorf("exit code 0 with stderr: %v, want nil", err)
	}
	err := scriptFailure(ScriptFirewallSet, Result{ExitCode: 1, Stderr: []byte("No MSFT_NetFirewallRule objects found\r\n")})
	if err == nil || !strings.Contains(err.Error(), "firewall-set") || !strings.Contains(err.Error(), "No MSFT_NetFirewallRule") {
		t.Errorf("error = %v, want the script's name and its stderr", err)
	}
}

// A script that fails says why in words: the failure line the prelude's
// trap prints, or the text of the CLIXML powershell.exe writes on a
// redirected stderr, never the XML.
func TestScriptFailureIsReadable(t *testing.T) {
	clixml := "#< CLIXML\r\n<Objs Version=\"1.1.0.1\" xmlns=\"http://schemas.microsoft.com/powershell/2004/04\">" +
		"<S S=\"Error\">Get-NetFirewallRule : No MSFT_NetFirewallRule objects found with property 'Name' equal to 'x'._x000D__x000A_</S>" +
		"<S S=\"Error\">At line:3 char:5_x000D__x000A_</S>" +
		"<S S=\"Progress\">ignored</S></Objs>"
	tests := []struct {
		name    string
		res     Result
		want    []string
		wantNot []string
	}{
		{"failure line", Result{ExitCode: 1, Stdout: []byte("noise\r\n{\"error\":{\"kind\":\"exception\",\"message\":\"Access is denied (at line 4)\"}}\r\n"), Stderr: []byte(clixml)},
			[]string{"firewall-set", "exception", "Access is denied (at line 4)"}, []string{"CLIXML", "<S"}},
		{"CLIXML", Result{ExitCode: 1, Stderr: []byte(clixml)},
			[]string{"firewall-set", "exited with code 1", "No MSFT_NetFirewallRule objects found with property 'Name' equal to 'x'.\nAt line:3 char:5"}, []string{"CLIXML", "<S", "_x000D_", "ignored"}},
		{"plain stderr", Result{ExitCode: 2, Stderr: []byte("  something broke\r\n")}, []string{"exited with code 2: something broke"}, nil},
		{"truncated CLIXML", Result{ExitCode: 1, Stderr: []byte(clixml[:150])}, []string{"No MSFT_NetFirewallRule"}, []string{"<S"}},
	}
	for _, tt := range tests {
		err := scriptFailure(ScriptFirewallSet, tt.res)
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", tt.name, err, w)
			}
		}
		for _, w := range tt.wantNot {
			if strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q holds %q", tt.name, err, w)
			}
		}
	}
}
