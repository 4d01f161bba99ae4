package simnode

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// ParseNonAdmin reads a --non-admin flag's NAME=PUBKEYFILE: a
// non-administrator account that logs in with the keys in that
// authorized_keys file (and with no other).
func ParseNonAdmin(v string) (Account, error) {
	name, file, ok := strings.Cut(v, "=")
	if !ok || name == "" || file == "" {
		return Account{}, fmt.Errorf("--non-admin %q: want NAME=PUBKEYFILE, e.g. mallory=mallory.pub", v)
	}
	if strings.ContainsAny(name, `\/"[]:|<>+=;,?*@ `) {
		return Account{}, fmt.Errorf("--non-admin %q: %q is not a Windows user name (no spaces or any of \\/\"[]:|<>+=;,?*@)", v, name)
	}
	keys, err := readAuthorizedKeys(file)
	if err != nil {
		return Account{}, fmt.Errorf("--non-admin %q: %w", v, err)
	}
	return Account{Name: name, Keys: keys}, nil
}

// ownKey reports whether key is one of the account's own keys.
func (a Account) ownKey(key ssh.PublicKey) bool {
	for _, k := range a.Keys {
		if bytes.Equal(k.Marshal(), key.Marshal()) {
			return true
		}
	}
	return false
}

// ensureProfiles gives each non-administrator account its profile folder,
// C:\Users\<name>, owned by it and closed to other users, as Windows
// creates at the first logon.
func (s *Server) ensureProfiles() error {
	for _, a := range s.accounts {
		if a.Admin {
			continue
		}
		home := `C:\Users\` + a.Name
		if err := s.m.mkdir(home, true); err != nil {
			return err
		}
		w, err := parseWinPath(home)
		if err != nil {
			return err
		}
		if err := s.m.update(func(st *State, _ time.Time) error {
			st.Owners[w.key()] = a.Name
			if st.ACLs[w.key()] == nil {
				st.ACLs[w.key()] = profileACL(a.Name)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}
