package config

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// writeTree creates files (a name ending in / is a directory) under dir.
func writeTree(t *testing.T, dir string, files ...string) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if strings.HasSuffix(f, "/") {
			if err := os.MkdirAll(p, 0o700); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// filesNode names every kind of local file, some there and some not.
const filesNode = `apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: win
spec:
  credentials:
    hostname: 10.0.0.5
    privateKey: keys/id_ed25519
  setup:
    authorizedKeys: [keys/id_ed25519.pub, keys/team.pub, keys/]
  kubernetes:
    provisioners:
    - name: kubelet
      sourceURL: ./bin/kubelet.exe
      destination: 'C:\k\kubelet.exe'
    - name: containerd
      sourceURL: FILE_URL
      destination: 'C:\k\containerd.exe'
    - name: kube-proxy
      sourceURL: https://dl.k8s.io/release/v1.33.0/bin/windows/amd64/kube-proxy.exe
      destination: 'C:\k\kube-proxy.exe'
  wins:
    sourceURL: ./bin/wins.exe
`

func TestLoadLocalFiles(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, "keys/id_ed25519", "keys/id_ed25519.pub", "bin/kubelet.exe")
	fileURL := "file://" + filepath.ToSlash(filepath.Join(dir, "bin", "containerd.exe"))
	if runtime.GOOS == "windows" {
		fileURL = "file:///" + filepath.ToSlash(filepath.Join(dir, "bin", "containerd.exe"))
	}
	path := filepath.Join(dir, "node.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(filesNode, "FILE_URL", fileURL, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := []want{
		{10, "spec.setup.authorizedKeys[1]", "public key file " + filepath.Join(dir, "keys", "team.pub") + " does not exist: fix the path"},
		{10, "spec.setup.authorizedKeys[2]", "public key file " + filepath.Join(dir, "keys") + " is a directory, not a file"},
		// The path of a file URL is the URL's (/C:/... on Windows).
		{17, "spec.kubernetes.provisioners[1].sourceURL", "containerd.exe does not exist: build it first or fix sourceURL"},
		{23, "spec.wins.sourceURL", "source " + filepath.Join(dir, "bin", "wins.exe") + " does not exist: build wins.exe first"},
	}
	tests := []struct {
		name     string
		opts     Options
		problems []want
		warnings []want
	}{
		{"unchecked", Options{}, nil, nil},
		{"warn", Options{Files: AllFiles}, nil, missing},
		{"required", Options{Files: AllFiles, FilesRequired: true}, missing, nil},
		{"only the kinds asked for", Options{Files: AuthorizedKeyFiles | WinsSource}, nil, []want{missing[0], missing[1], missing[3]}},
		{"none of the kinds asked for is missing", Options{Files: PrivateKeyFile, FilesRequired: true}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := LoadWith(path, tt.opts)
			var cerr *Error
			switch {
			case tt.problems == nil && err != nil:
				t.Fatalf("LoadWith: %v", err)
			case tt.problems != nil && !errors.As(err, &cerr):
				t.Fatalf("LoadWith = %v, want problems", err)
			case tt.problems != nil:
				checkWants(t, cerr.Problems, tt.problems)
			default:
				checkWants(t, res.Warnings, tt.warnings)
			}
		})
	}
}

func checkWants(t *testing.T, got []Problem, wants []want) {
	t.Helper()
	if len(got) != len(wants) {
		t.Fatalf("got %d, want %d: %v", len(got), len(wants), got)
	}
	for i, w := range wants {
		p := got[i]
		if p.Line != w.line || p.Field != w.field || p.Node != "win" || !strings.Contains(p.Message, w.msg) {
			t.Errorf("%d = %+v\nwant line %d field %q message containing %q", i, p, w.line, w.field, w.msg)
		}
	}
}

// A field with a problem already is not checked again: its path is not
// the one swdt would read.
func TestLoadLocalFilesAfterProblems(t *testing.T) {
	_, err := LoadWith(filepath.Join("testdata", "invalid", "tilde-user.yaml"), Options{Files: AllFiles, FilesRequired: true})
	var cerr *Error
	if !errors.As(err, &cerr) || len(cerr.Problems) != 1 || !strings.Contains(cerr.Problems[0].Message, "only ~") {
		t.Errorf("LoadWith = %v, want only the ~user problem", err)
	}
}

func TestFileProblem(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, "ok", "sub/")
	unreadable := filepath.Join(dir, "unreadable")
	writeTree(t, dir, "unreadable")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"a file", filepath.Join(dir, "ok"), ""},
		{"missing", filepath.Join(dir, "nope"), "source " + filepath.Join(dir, "nope") + " does not exist: FIX"},
		{"a directory", filepath.Join(dir, "sub"), "is a directory, not a file: FIX"},
		{"under a file", filepath.Join(dir, "ok", "x"), "cannot be read: not a directory"},
		{"unreadable", unreadable, "cannot be read: permission denied: check its permissions"},
	}
	if _, err := os.Stat("/dev/null"); err == nil {
		tests = append(tests, struct{ name, path, want string }{"a device", "/dev/null", "is not a regular file"})
	}
	// A program built for this machine, where the node needs Windows (a
	// forgotten GOOS=windows): this test's own binary.
	if runtime.GOOS == "linux" {
		tests = append(tests, struct{ name, path, want string }{"a linux program", os.Args[0],
			"source " + os.Args[0] + " is an ELF executable for linux/" + runtime.GOARCH + ", not a program for windows/amd64 or windows/arm64: build it with GOOS=windows"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "unreadable" && (runtime.GOOS == "windows" || os.Geteuid() == 0) {
				t.Skip("mode bits do not stop Windows or root from reading")
			}
			if tt.name == "under a file" && runtime.GOOS == "windows" {
				t.Skip("Windows says the path is not found")
			}
			got := fileProblem(localFile{path: tt.path, what: "source", fix: "FIX", program: true})
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("fileProblem(%s) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}
