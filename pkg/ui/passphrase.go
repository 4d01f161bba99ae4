package ui

import (
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// PassphrasePrompt returns a function that asks on the terminal for the
// passphrase of an encrypted private key, or nil when in is not a terminal
// (then only SWDT_KEY_PASSPHRASE can unlock the key). Nodes connect in
// parallel, so prompts come one at a time and each key file is asked for
// once per run.
func (u *UI) PassphrasePrompt(in io.Reader) func(keyFile string) ([]byte, error) {
	f, ok := in.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	fd := int(f.Fd())
	return u.passphrasePrompt(func() ([]byte, error) { return term.ReadPassword(fd) })
}

// passphrasePrompt is PassphrasePrompt with the terminal read injected.
func (u *UI) passphrasePrompt(read func() ([]byte, error)) func(keyFile string) ([]byte, error) {
	var (
		mu    sync.Mutex
		asked = map[string][]byte{}
	)
	return func(keyFile string) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		if p, ok := asked[keyFile]; ok {
			return p, nil
		}
		u.mu.Lock()
		fmt.Fprintf(u.err, "Enter passphrase for key %s: ", keyFile)
		u.mu.Unlock()
		p, err := read()
		u.mu.Lock()
		fmt.Fprintln(u.err)
		u.mu.Unlock()
		if err != nil {
			return nil, fmt.Errorf("read passphrase for %s: %w", keyFile, err)
		}
		asked[keyFile] = p
		return p, nil
	}
}
