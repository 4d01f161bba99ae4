// Command release packs the swdt builds `make release` made into
// versioned archives and writes their SHA256SUMS.
//
// Each folder DIR/swdt-VERSION-OS-ARCH (holding swdt or swdt.exe) becomes
// DIR/swdt-VERSION-OS-ARCH.tar.gz (.zip for windows) with the README
// beside the binary, and the folder is removed. Entries carry fixed
// times and modes, so that two builds of one commit give the same bytes.
//
//	go run ./hack/release -dir dist -readme README.md
package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	dir := flag.String("dir", "dist", "the folder holding one folder per platform")
	readme := flag.String("readme", "README.md", "the README to put in each archive")
	flag.Parse()
	if err := pack(*dir, *readme); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// epoch is every entry's time: the archives depend on their content only.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// pack archives every swdt-* folder of dir and writes dir/SHA256SUMS.
func pack(dir, readme string) error {
	doc, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var sums []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "swdt-") {
			continue
		}
		name, err := packOne(dir, e.Name(), doc)
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		sum := sha256.Sum256(raw)
		sums = append(sums, hex.EncodeToString(sum[:])+"  "+name+"\n")
	}
	if len(sums) == 0 {
		return fmt.Errorf("no swdt-VERSION-OS-ARCH folder in %s: run make release", dir)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i][66:] < sums[j][66:] })
	return os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(strings.Join(sums, "")), 0o644)
}

// packOne archives dir/name (its swdt binary and the README) into
// dir/name.tar.gz, or .zip for windows, removes the folder and returns
// the archive's name.
func packOne(dir, name string, readme []byte) (string, error) {
	bin := "swdt"
	if strings.Contains(name, "-windows-") {
		bin = "swdt.exe"
	}
	exe, err := os.ReadFile(filepath.Join(dir, name, bin))
	if err != nil {
		return "", err
	}
	files := []file{{name + "/" + bin, exe, 0o755}, {name + "/README.md", readme, 0o644}}
	var buf bytes.Buffer
	archive := name + ".tar.gz"
	if bin == "swdt.exe" {
		archive = name + ".zip"
		err = writeZip(&buf, files)
	} else {
		err = writeTarGz(&buf, files)
	}
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, archive), buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return archive, os.RemoveAll(filepath.Join(dir, name))
}

type file struct {
	name string
	data []byte
	mode fs.FileMode
}

func writeTarGz(w io.Writer, files []file) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: int64(f.mode), Size: int64(len(f.data)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func writeZip(w io.Writer, files []file) error {
	zw := zip.NewWriter(w)
	for _, f := range files {
		hdr := &zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: epoch}
		hdr.SetMode(f.mode)
		fw, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.data); err != nil {
			return err
		}
	}
	return zw.Close()
}
