package ui

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
)

func TestPassphrasePromptAsksOncePerKey(t *testing.T) {
	var stderr bytes.Buffer
	u := New(&bytes.Buffer{}, &stderr, Options{})
	reads := 0
	prompt := u.passphrasePrompt(func() ([]byte, error) {
		reads++
		return []byte("hunter2"), nil
	})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if p, err := prompt("/home/dev/.ssh/id_ed25519"); err != nil || string(p) != "hunter2" {
				t.Errorf("prompt = %q, %v", p, err)
			}
		}()
	}
	wg.Wait()
	if reads != 1 || strings.Count(stderr.String(), "Enter passphrase for key /home/dev/.ssh/id_ed25519: ") != 1 {
		t.Fatalf("reads = %d, stderr = %q", reads, stderr.String())
	}
	if strings.Contains(stderr.String(), "hunter2") {
		t.Fatal("the passphrase was echoed")
	}
}

func TestPassphrasePromptError(t *testing.T) {
	u := New(&bytes.Buffer{}, &bytes.Buffer{}, Options{})
	boom := errors.New("inappropriate ioctl for device")
	prompt := u.passphrasePrompt(func() ([]byte, error) { return nil, boom })
	if _, err := prompt("key"); !errors.Is(err, boom) || !strings.Contains(err.Error(), "read passphrase for key") {
		t.Fatalf("err = %v", err)
	}
}

func TestPassphrasePromptNeedsATerminal(t *testing.T) {
	u := New(&bytes.Buffer{}, &bytes.Buffer{}, Options{})
	if u.PassphrasePrompt(strings.NewReader("")) != nil || u.PassphrasePrompt(nil) != nil {
		t.Fatal("a prompt without a terminal")
	}
}
