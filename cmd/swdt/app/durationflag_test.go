package app

import (
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/exitcode"
)

// A flag value that means nothing (a negative timeout, or a zero one that
// would only stand for the default) is a usage error naming the flag and
// what it accepts, before any file is read or node contacted.
func TestMeaninglessFlagValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"kubernetes", "--lock-wait", "-5s"}, `invalid argument "-5s" for "--lock-wait" flag: must be more than 0`},
		{[]string{"kubernetes", "--lock-wait", "0"}, `"--lock-wait" flag: must be more than 0`},
		{[]string{"kubernetes", "--stop-timeout", "-1s"}, `"--stop-timeout" flag: must be more than 0`},
		{[]string{"kubernetes", "--start-timeout", "0s"}, `"--start-timeout" flag: must be more than 0`},
		{[]string{"kubernetes", "--settle", "-1s"}, `invalid argument "-1s" for "--settle" flag: must be 0 or more`},
		{[]string{"kubernetes", "--health-timeout", "-30s"}, `"--health-timeout" flag: must be more than 0`},
		{[]string{"kubernetes", "--download-stall-timeout", "0"}, `"--download-stall-timeout" flag: must be more than 0`},
		{[]string{"kubernetes", "--download-stall-timeout", "-1m"}, `"--download-stall-timeout" flag: must be more than 0`},
		{[]string{"kubernetes", "--download-timeout", "0s"}, `"--download-timeout" flag: must be more than 0`},
		{[]string{"kubernetes", "--debounce", "-1ms"}, `"--debounce" flag: must be 0 or more`},
		{[]string{"kubernetes", "--stop-timeout", "soon"}, `"--stop-timeout" flag: not a duration: write for example 30s, 2m or 1h30m`},
		{[]string{"wins", "--lock-wait", "-5s"}, `"--lock-wait" flag: must be more than 0`},
		{[]string{"wins", "--settle", "-1s"}, `"--settle" flag: must be 0 or more`},
		{[]string{"wins", "--download-timeout", "-1h"}, `"--download-timeout" flag: must be more than 0`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := run(t, append(tt.args, "-c", "does-not-exist.yaml")...)
			if code != exitcode.Usage {
				t.Errorf("exit %d, want %d (usage)", code, exitcode.Usage)
			}
			if !strings.Contains(errOut, tt.want) || strings.Count(errOut, "error:") != 1 {
				t.Errorf("stderr = %q, want one error containing %q", errOut, tt.want)
			}
		})
	}
}

// The values that mean something are taken: zero settling, zero debounce.
func TestMeaningfulZeroFlagValues(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"kubernetes", "--settle", "0", "--debounce", "0s"},
		{"wins", "--settle", "0s"},
	} {
		code, _, errOut := run(t, append(args, "-c", "does-not-exist.yaml")...)
		// The flags parse; the missing node file is what fails.
		if code != exitcode.Usage || !strings.Contains(errOut, "does-not-exist.yaml") || strings.Contains(errOut, "flag") {
			t.Errorf("%v: exit %d, stderr %q, want only the missing node file reported", args, code, errOut)
		}
	}
}
