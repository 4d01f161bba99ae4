package app

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// runIn is run with in as stdin: a terminal's keys, typed ahead.
func runIn(t *testing.T, in string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), Streams{In: strings.NewReader(in), Out: &out, ErrOut: &errb}, args)
	return code, out.String(), errb.String()
}

func TestSSH(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("winworker", ts.Credentials()))
	const prompt = `C:\Users\Administrator>`

	t.Run("interactive: keys, Ctrl-C to the remote program, exit status", func(t *testing.T) {
		// Ctrl-C interrupts the 30 s timeout on the node: the test would
		// otherwise take 30 s and the output would lack ^C.
		keys := "hostname\r" + "timeout /t 30\r\x03" + "echo one  two\r" + "nosuch\r" + "exit 5\r"
		code, out, errOut := runIn(t, keys, "ssh", "-c", file, "winworker")
		if code != 5 {
			t.Fatalf("exit %d, want 5\nstdout: %q\nstderr: %s", code, out, errOut)
		}
		for _, want := range []string{
			prompt + "hostname\r\nWIN-SIMNODE01\r\n",
			prompt + "timeout /t 30\r\n^C",
			prompt + "echo one  two\r\none two\r\n",
			"'nosuch' is not recognized",
			prompt + "exit 5\r\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%q", want, out)
			}
		}
	})
	t.Run("one command with a terminal", func(t *testing.T) {
		code, out, errOut := runIn(t, "", "ssh", "-c", file, "winworker", "--", "hostname")
		if code != exitcode.OK || out != "WIN-SIMNODE01\r\n" {
			t.Errorf("exit %d, stdout %q\n%s", code, out, errOut)
		}
		code, _, errOut = runIn(t, "", "ssh", "-c", file, "--", "cmd", "/c", "exit", "/b", "7")
		if code != 7 {
			t.Errorf("the file's only node: exit %d, want 7\n%s", code, errOut)
		}
	})
	t.Run("Ctrl-C to one command", func(t *testing.T) {
		code, _, errOut := runIn(t, "\x03", "ssh", "-c", file, "--node", "winworker", "--", "timeout", "/t", "30")
		if code != exitcode.Failure || !strings.Contains(errOut, "exited with status 3221225786 (0xC000013A)") {
			t.Errorf("exit %d\n%s", code, errOut)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, errOut := runIn(t, "", "ssh", "-c", file, "-o", "json", "--", "hostname")
		if code != exitcode.OK {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		doc := decodeJSON[report.Command](t, out)
		if doc.Kind != report.KindSSH || doc.Result != report.OK || doc.Output != "WIN-SIMNODE01\n" || doc.Command != "hostname" || doc.Node != "winworker" {
			t.Errorf("document: %s", out)
		}
		if code, _, errOut := runIn(t, "", "ssh", "-c", file, "-o", "json"); code != exitcode.Usage || !strings.Contains(errOut, "an interactive shell has no JSON output") {
			t.Errorf("interactive -o json: exit %d\n%s", code, errOut)
		}
	})
}

// swdt exec -o json and swdt ssh -o json -- COMMAND print one document,
// with the same fields, and both exit with the command's status.
func TestExecAndSSHPrintOneDocument(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := statusFile(t, ts, "", "MZ kubelet\n")
	tests := []struct {
		verb, kind string
		args       []string
		code       int
		result     string
	}{
		{"exec", report.KindExec, []string{"--", "hostname"}, 0, report.OK},
		{"ssh", report.KindSSH, []string{"--", "hostname"}, 0, report.OK},
		{"exec", report.KindExec, []string{"--", "cmd.exe", "/c", "exit", "/b", "3"}, 3, report.Failed},
		{"ssh", report.KindSSH, []string{"--", "exit", "3"}, 3, report.Failed},
	}
	var fields []map[string]any
	for _, tt := range tests {
		code, out, errOut := run(t, append([]string{"-o", "json", tt.verb, "-c", file, "winworker"}, tt.args...)...)
		doc := decodeJSON[map[string]any](t, out)
		if code != tt.code || doc["kind"] != tt.kind || doc["result"] != tt.result || doc["exitCode"] != float64(tt.code) || doc["node"] != "winworker" {
			t.Errorf("swdt %s %v: exit %d, want %d, %s\n%s", tt.verb, tt.args, code, tt.code, out, errOut)
		}
		if tt.code == 0 && strings.TrimSpace(doc["output"].(string)) != "WIN-SIMNODE01" {
			t.Errorf("swdt %s: output %q", tt.verb, doc["output"])
		}
		fields = append(fields, doc)
	}
	if !maps.EqualFunc(fields[0], fields[1], func(any, any) bool { return true }) {
		t.Errorf("exec and ssh print different fields:\n%v\n%v", fields[0], fields[1])
	}
}
