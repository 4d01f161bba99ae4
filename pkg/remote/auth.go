package remote

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// keySource holds the ssh-agent's keys and the key files loaded so far,
// shared by every hop of a route and reused on reconnect, so that a
// passphrase is asked for at most once.
type keySource struct {
	agentSigners []ssh.Signer
	agentConn    io.Closer
	agentDesc    string
	files        map[string]loadedKey
	passphrase   func(keyFile string) ([]byte, error)
	log          *slog.Logger
}

type loadedKey struct {
	signer ssh.Signer // nil: the agent holds the key
	err    error
}

// openKeySource connects to ssh-agent where this OS's OpenSSH client
// finds it (dialAgent).
func openKeySource(passphrase func(string) ([]byte, error), log *slog.Logger) *keySource {
	ks := &keySource{files: map[string]loadedKey{}, passphrase: passphrase, log: log}
	c, where, err := dialAgent(os.Getenv("SSH_AUTH_SOCK"))
	if err != nil {
		log.Debug("ssh-agent unreachable", "socket", where, "err", err)
		return ks
	}
	if c == nil {
		return ks
	}
	signers, err := agent.NewClient(c).Signers()
	if err != nil {
		log.Debug("ssh-agent signers", "err", err)
		c.Close()
		return ks
	}
	ks.agentSigners, ks.agentConn = signers, c
	ks.agentDesc = fmt.Sprintf("ssh-agent: %d key(s)", len(signers))
	return ks
}

func (ks *keySource) close() {
	if ks.agentConn != nil {
		ks.agentConn.Close()
	}
}

func (ks *keySource) load(path string) (ssh.Signer, error) {
	k, ok := ks.files[path]
	if !ok {
		k.signer, k.err = loadKeyFile(path, ks.agentSigners, ks.passphrase)
		ks.files[path] = k
	}
	return k.signer, k.err
}

// credentials are one hop's means of authentication.
type credentials struct {
	agentSigners []ssh.Signer
	keySigners   []ssh.Signer
	password     string
	// publicKeyDesc lists the keys offered, for AuthError.
	publicKeyDesc string
}

// credentials collects ssh-agent keys, h's private key files and the
// password. A key file given explicitly that cannot be used is an error;
// default key files that are missing or locked are skipped.
func (ks *keySource) credentials(h hop, password string) (*credentials, error) {
	cr := &credentials{agentSigners: ks.agentSigners, password: password}
	var desc []string
	if ks.agentDesc != "" {
		desc = append(desc, ks.agentDesc)
	}
	for _, f := range h.keyFiles {
		s, err := ks.load(f)
		if err != nil {
			var pe *PrivateKeyError
			if h.keyExplicit || (errors.As(err, &pe) && errors.Is(err, ErrWrongPassphrase)) {
				return nil, err
			}
			ks.log.Debug("skip default private key", "file", f, "err", err)
			continue
		}
		if s == nil {
			desc = append(desc, f+" (same key as ssh-agent)")
			continue
		}
		cr.keySigners = append(cr.keySigners, s)
		desc = append(desc, f)
	}
	cr.publicKeyDesc = strings.Join(desc, "; ")
	return cr, nil
}

// offered describes one auth method for AuthError.
type offered struct {
	name string // protocol name: publickey, password, keyboard-interactive
	desc string
}

// methods returns the auth methods in order: public keys (agent first,
// then key files), password, keyboard-interactive. The SSH library tries
// each method name once, so all keys share one publickey method.
func (cr *credentials) methods() ([]ssh.AuthMethod, []offered) {
	var m []ssh.AuthMethod
	var tried []offered
	signers := append(append([]ssh.Signer{}, cr.agentSigners...), cr.keySigners...)
	if len(signers) > 0 {
		m = append(m, ssh.PublicKeys(signers...))
		tried = append(tried, offered{"publickey", "publickey (" + cr.publicKeyDesc + ")"})
	}
	if cr.password != "" {
		pw := cr.password
		m = append(m, ssh.Password(pw), ssh.KeyboardInteractive(func(name, instruction string, questions []string, echos []bool) ([]string, error) {
			answers := make([]string, len(questions))
			for i := range answers {
				answers[i] = pw
			}
			return answers, nil
		}))
		tried = append(tried, offered{"password", "password"}, offered{"keyboard-interactive", "keyboard-interactive"})
	}
	return m, tried
}

// loadKeyFile parses a private key, decrypting it with SWDT_KEY_PASSPHRASE
// or the prompt. It returns nil, nil when the agent already holds the key,
// so the user is not prompted needlessly.
func loadKeyFile(path string, agentSigners []ssh.Signer, prompt func(string) ([]byte, error)) (ssh.Signer, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, &PrivateKeyError{Path: path, Err: err}
	}
	signer, err := ssh.ParsePrivateKey(pem)
	if err == nil {
		return signer, nil
	}
	var missing *ssh.PassphraseMissingError
	if !errors.As(err, &missing) {
		return nil, &PrivateKeyError{Path: path, Err: err}
	}
	if missing.PublicKey != nil {
		for _, s := range agentSigners {
			if bytes.Equal(s.PublicKey().Marshal(), missing.PublicKey.Marshal()) {
				return nil, nil
			}
		}
	}
	var pass []byte
	if v, ok := os.LookupEnv(PassphraseEnv); ok {
		pass = []byte(v)
	} else if prompt != nil {
		pass, err = prompt(path)
		if err != nil {
			return nil, &PrivateKeyError{Path: path, Err: fmt.Errorf("read passphrase: %w", err)}
		}
	} else {
		return nil, &PrivateKeyError{Path: path, Err: fmt.Errorf("key is passphrase-protected: set %s, load it into ssh-agent, or run on a terminal to be prompted", PassphraseEnv)}
	}
	signer, err = ssh.ParsePrivateKeyWithPassphrase(pem, pass)
	clear(pass)
	if err != nil {
		if errors.Is(err, x509.IncorrectPasswordError) {
			return nil, &PrivateKeyError{Path: path, Err: ErrWrongPassphrase}
		}
		return nil, &PrivateKeyError{Path: path, Err: err}
	}
	return signer, nil
}
