package app

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// Every one-node verb finds its node the same way and completes node
// names.
func TestOneNodeVerbs(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	dir := t.TempDir()
	two := writeNodeFile(t, dir, nodeHeader("alpha", ts.Credentials())+`  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./kubelet.exe
      destination: 'C:\k\kubelet.exe'
`+"---\n"+nodeHeader("beta", ts.Credentials()))
	one := writeNodeFile(t, t.TempDir(), nodeHeader("solo", ts.Credentials()))

	for _, tt := range []struct {
		name string
		args []string
		code int
		out  string // in stdout
		err  string // in stderr
	}{
		{"named", []string{"-c", two, "ssh", "beta", "--", "hostname"}, exitcode.OK, "WIN-SIMNODE01", ""},
		{"--node", []string{"-c", two, "--node", "beta", "ssh", "--", "hostname"}, exitcode.OK, "WIN-SIMNODE01", ""},
		{"named and the same --node", []string{"-c", two, "--node", "beta", "ssh", "beta", "--", "hostname"}, exitcode.OK, "WIN-SIMNODE01", ""},
		{"the file's only node", []string{"-c", one, "ssh", "--", "hostname"}, exitcode.OK, "WIN-SIMNODE01", ""},
		{"the file's only node, cp", []string{"-c", one, "cp", ":C:\\Windows\\System32\\hostname.exe", dir}, exitcode.OK, "", "copied 1 file"},
		{"none of two", []string{"-c", two, "reboot"}, exitcode.Usage, "", "swdt reboot needs a node: " + two + " has 2 (alpha, beta); name one first, or use --node"},
		{"a typo", []string{"-c", two, "restart", "alpah", "kubelet"}, exitcode.Usage, "", `has no node "alpah"; did you mean "alpha"?`},
		{"two --node", []string{"-c", two, "--node", "alpha,beta", "ssh"}, exitcode.Usage, "", "swdt ssh works on one node, not --node alpha,beta"},
		{"named and another --node", []string{"-c", two, "--node", "alpha", "restart", "beta", "kubelet"}, exitcode.Usage, "", "it was named beta and --node alpha"},
		{"cp to an unknown node", []string{"-c", two, "cp", dir, "gamma:C:\\k"}, exitcode.Usage, "", `has no node "gamma"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run(t, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.out) || !strings.Contains(errOut, tt.err) {
				t.Errorf("exit %d, stdout %q, stderr %s\nwant exit %d, %q, %q", code, out, errOut, tt.code, tt.out, tt.err)
			}
		})
	}

	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"ssh", ""}, []string{"alpha", "beta"}},
		{[]string{"port-forward", ""}, []string{"alpha", "beta"}},
		{[]string{"reboot", ""}, []string{"alpha", "beta"}},
		{[]string{"restart", ""}, []string{"alpha", "beta"}}, // no node yet: no service
		{[]string{"--node", "alpha", "restart", ""}, []string{"alpha", "beta", "kubelet"}},
		{[]string{"restart", "alpha", ""}, []string{"kubelet"}},
		{[]string{"cp", ""}, []string{"alpha:", "beta:"}},
	} {
		t.Run("complete "+strings.Join(tt.args, " "), func(t *testing.T) {
			code, out, _ := run(t, append([]string{"__complete", "-c", two}, tt.args...)...)
			got := strings.Split(strings.TrimSpace(out), "\n")
			got = got[:len(got)-1] // the directive
			if code != exitcode.OK || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("completions %q, want %q", got, tt.want)
			}
		})
	}
}
