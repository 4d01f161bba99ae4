// Package winname holds Windows' rules for one file or folder name (one
// element of a path), as Microsoft's "Naming Files, Paths, and
// Namespaces" states them, plus the one rule that is swdt's own: no name
// that swdt itself gives the files it keeps beside a file.
//
// It is pure string logic, the same on every OS: a name that a node sent
// is checked with it before it becomes part of a path on the laptop, and
// a destination in a node file before swdt creates it on the node.
package winname

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// Rule names the rule a name breaks.
type Rule string

// The rules Check applies, in the order it applies them.
const (
	RuleEmpty     Rule = "empty"
	RuleDots      Rule = "dots"
	RuleSeparator Rule = "separator"
	RuleControl   Rule = "control"
	RuleReserved  Rule = "reserved-char"
	RuleTrailing  Rule = "trailing"
	RuleDevice    Rule = "device"
	RuleTooLong   Rule = "too-long"
)

// MaxLength is the longest name NTFS takes, in UTF-16 code units.
const MaxLength = 255

// Error is a name that breaks a rule.
type Error struct {
	Name string
	Rule Rule
	// Detail says what the rule is, for the user.
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("%q %s", e.Name, e.Detail) }

// Check returns an *Error when name cannot be one element of a Windows
// path, or could be read as more than one.
func Check(name string) error {
	fail := func(r Rule, detail string) error { return &Error{Name: name, Rule: r, Detail: detail} }
	switch {
	case name == "":
		return fail(RuleEmpty, "is empty")
	case name == "." || name == "..":
		return fail(RuleDots, "names the folder itself or its parent")
	case strings.ContainsAny(name, `\/`):
		return fail(RuleSeparator, `holds a path separator (\ or /)`)
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == unicode.ReplacementChar {
			return fail(RuleControl, fmt.Sprintf("holds the control, format or direction character %U, which shows one name and means another", r))
		}
	}
	switch {
	case strings.ContainsAny(name, `<>:"|?*`):
		return fail(RuleReserved, `holds one of < > : " | ? *, which Windows reserves (: starts a drive or an alternate data stream)`)
	case strings.HasSuffix(name, " ") || strings.HasSuffix(name, "."):
		return fail(RuleTrailing, "ends with a space or a dot, which Windows drops, so it names another file")
	case IsDevice(name):
		return fail(RuleDevice, "is a reserved Windows device name, with or without an extension")
	case utf16Len(name) > MaxLength:
		return fail(RuleTooLong, fmt.Sprintf("is longer than the %d characters a Windows name may have", MaxLength))
	}
	return nil
}

// shortAlias matches the 8.3 names NTFS generates for long ones: at most
// six characters of the long name, a tilde and a number (eight in all),
// and at most three of its extension (PROGRA~1, KUBELE~2.EXE).
var shortAlias = regexp.MustCompile(`^[^~.\s]{1,6}~[0-9]{1,6}(\.[^.~\s]{1,3})?$`)

// ShortAlias reports whether name has the form of an 8.3 short name NTFS
// gives a long one: on a volume that makes them, such a name may open
// another file than the one it seems to (C:\PROGRA~1 is C:\Program
// Files), and two names of one file pass for two files.
func ShortAlias(name string) bool {
	base, _, _ := strings.Cut(name, ".")
	return len(base) <= 8 && shortAlias.MatchString(name)
}

// IsDevice reports whether name is a DOS device name Windows resolves
// anywhere in a path: CON, PRN, AUX, NUL, COM0-9 and LPT0-9 (the
// superscript ¹ ² ³ forms too), CONIN$ and CONOUT$, with or without an
// extension and with trailing spaces before it.
func IsDevice(name string) bool {
	base, _, _ := strings.Cut(name, ".")
	base = strings.ToUpper(strings.TrimRight(base, " "))
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return true
	}
	if r := []rune(base); len(r) == 4 && (string(r[:3]) == "COM" || string(r[:3]) == "LPT") {
		return r[3] >= '0' && r[3] <= '9' || r[3] == '¹' || r[3] == '²' || r[3] == '³'
	}
	return false
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n++
		}
		n++
	}
	return n
}
