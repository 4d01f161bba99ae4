package agentbin

import (
	"errors"
	"strings"
	"testing"
)

func TestMissingArchitectureSaysHowToBuild(t *testing.T) {
	_, err := For("mips64")
	if !errors.Is(err, ErrNotBuilt) || !strings.Contains(err.Error(), "make build") || !strings.Contains(err.Error(), "windows/mips64") {
		t.Errorf("err = %v, want ErrNotBuilt saying to run make build", err)
	}
}

func TestEmbeddedAgentsHaveDigests(t *testing.T) {
	for _, arch := range []string{"amd64", "arm64"} {
		a, err := For(arch)
		if errors.Is(err, ErrNotBuilt) {
			t.Fatalf("%v: `make test` builds the agent first; with plain go test, run `make agent` once", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(a.SHA256) != 64 || len(a.Binary) < 1<<20 || string(a.Binary[:2]) != "MZ" {
			t.Errorf("%s: %d bytes, sha256 %q: not a Windows executable", arch, len(a.Binary), a.SHA256)
		}
	}
}

// The digest make agent records is the agent's own.
func TestRecordedDigestMatches(t *testing.T) {
	a, err := For("amd64")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Digest("amd64")
	if err != nil || d != a.SHA256 {
		t.Errorf("Digest = %q, %v; the agent's SHA-256 is %s (run make agent again)", d, err, a.SHA256)
	}
	if n, err := Size("amd64"); err != nil || n != int64(len(a.Binary)) {
		t.Errorf("Size = %d, %v; the agent has %d bytes", n, err, len(a.Binary))
	}
	if _, err := Size("mips64"); !errors.Is(err, ErrNotBuilt) {
		t.Errorf("Size of a missing architecture: %v, want ErrNotBuilt", err)
	}
}
