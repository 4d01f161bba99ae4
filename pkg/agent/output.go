package agent

import (
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/swdt/pkg/winos"
)

// printed is what a program or script printed, stdout then stderr
// (PowerShell's CLIXML errors as their text), trimmed.
func printed(res winos.Result) string {
	return strings.TrimSpace(strings.TrimSpace(string(res.Stdout)) + "\r\n" + winos.ScriptStderr(res.Stderr))
}

// lastBytes returns the last n bytes of s, trimmed (cut at a rune
// boundary): the end of a long output, where the error usually is.
func lastBytes(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
