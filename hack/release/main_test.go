package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pack turns each platform's folder into its archive (the binary, with
// its mode, and the README) and lists every archive's digest; packing the
// same builds twice gives the same bytes.
func TestPack(t *testing.T) {
	var first string
	for round := 0; round < 2; round++ {
		dir := t.TempDir()
		readme := filepath.Join(dir, "README.md")
		write(t, readme, "# swdt\n")
		write(t, filepath.Join(dir, "swdt-v1.2.3-linux-amd64", "swdt"), "ELF swdt")
		write(t, filepath.Join(dir, "swdt-v1.2.3-windows-arm64", "swdt.exe"), "MZ swdt")
		if err := pack(dir, readme); err != nil {
			t.Fatal(err)
		}
		sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
		if len(lines) != 2 || !strings.HasSuffix(lines[0], "  swdt-v1.2.3-linux-amd64.tar.gz") || !strings.HasSuffix(lines[1], "  swdt-v1.2.3-windows-arm64.zip") {
			t.Fatalf("SHA256SUMS = %q", sums)
		}
		for _, l := range lines {
			raw, err := os.ReadFile(filepath.Join(dir, l[66:]))
			if err != nil {
				t.Fatal(err)
			}
			if sum := sha256.Sum256(raw); hex.EncodeToString(sum[:]) != l[:64] {
				t.Errorf("%s: digest %s in SHA256SUMS is not the archive's", l[66:], l[:64])
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "swdt-v1.2.3-linux-amd64")); !os.IsNotExist(err) {
			t.Errorf("the platform folder is left: %v", err)
		}
		tarFiles := untar(t, filepath.Join(dir, "swdt-v1.2.3-linux-amd64.tar.gz"))
		if tarFiles["swdt-v1.2.3-linux-amd64/swdt"] != "ELF swdt 755" || tarFiles["swdt-v1.2.3-linux-amd64/README.md"] != "# swdt\n 644" {
			t.Errorf("tar.gz holds %q", tarFiles)
		}
		zipFiles := unzip(t, filepath.Join(dir, "swdt-v1.2.3-windows-arm64.zip"))
		if zipFiles["swdt-v1.2.3-windows-arm64/swdt.exe"] != "MZ swdt" || len(zipFiles) != 2 {
			t.Errorf("zip holds %q", zipFiles)
		}
		if round == 1 && string(sums) != first {
			t.Errorf("a second pack of the same builds differs:\n%s\n%s", first, sums)
		}
		first = string(sums)
	}
	if err := pack(t.TempDir(), "README.md"); err == nil {
		t.Error("pack without a README or builds succeeded")
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func untar(t *testing.T, p string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = fmt.Sprintf("%s %o", b, h.Mode)
	}
}

func unzip(t *testing.T, p string) map[string]string {
	t.Helper()
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		out[f.Name] = string(b)
	}
	return out
}
