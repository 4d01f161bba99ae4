// Package sshname checks host names, user names and ports the way
// OpenSSH's client does before it uses them: a name that could change the
// meaning of a command line (a ProxyCommand run by a shell, an option to a
// program) is refused. It is the one rule for the node file's validation
// and for everything pkg/remote resolves from ~/.ssh/config.
package sshname

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// hostMeta are the characters OpenSSH refuses in a host name: quotes,
// and what a shell treats as syntax or expansion.
const hostMeta = "'`\"$\\;&<>|(){},"

// userMeta are the characters OpenSSH refuses in a user name. A user may
// hold $ and \ (DOMAIN\user), which host names may not.
const userMeta = "'`\";&<>|(){}"

// Host returns an error saying why OpenSSH's client would refuse s as a
// host name: it starts with '-' (it would read as an option), or holds
// whitespace, a control character or one of '`"$\;&<>|(){},.
func Host(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("a host name must not be empty")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("a host name must not start with '-'")
	}
	for _, r := range s {
		switch {
		case unicode.IsSpace(r) || unicode.IsControl(r):
			return fmt.Errorf("a host name must not contain whitespace or control characters (%q)", r)
		case strings.ContainsRune(hostMeta, r):
			return fmt.Errorf("a host name must not contain %q: like OpenSSH, swdt refuses any of %s in one, which a shell would act on; write the node's address or a Host alias of ~/.ssh/config", r, hostMeta)
		}
	}
	return nil
}

// User returns an error saying why OpenSSH's client would refuse s as a
// user name: it starts with '-', holds a control character, one of
// '`";&<>|(){}, or whitespace followed by '-', or ends with '\'.
func User(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("a user name must not be empty")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("a user name must not start with '-'")
	case strings.HasSuffix(s, `\`):
		return fmt.Errorf(`a user name must not end with '\'`)
	}
	prevSpace := false
	for _, r := range s {
		switch {
		case unicode.IsControl(r):
			return fmt.Errorf("a user name must not contain control characters (%q)", r)
		case strings.ContainsRune(userMeta, r):
			return fmt.Errorf("a user name must not contain %q: like OpenSSH, swdt refuses any of %s in one, which a shell would act on", r, userMeta)
		case prevSpace && r == '-':
			return fmt.Errorf("a user name must not contain whitespace followed by '-'")
		}
		prevSpace = unicode.IsSpace(r)
	}
	return nil
}

// Port returns an error unless s is a port number from 1 to 65535 written
// in decimal digits (no sign).
func Port(s string) error {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return fmt.Errorf("port %q is not a number from 1 to 65535", s)
	}
	return nil
}
