package app

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/sshdtest"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// writeTree writes files (by slash-separated relative path) under dir.
func writeTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkTree fails unless dir holds exactly files.
func checkTree(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	got := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(files) {
		t.Errorf("%s holds %d files, want %d", dir, len(got), len(files))
	}
	for rel, want := range files {
		if !bytes.Equal(got[rel], want) {
			t.Errorf("%s/%s: %d bytes, not the %d sent", dir, rel, len(got[rel]), len(want))
		}
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// copyRoundTrip copies a file and a folder to the node (at remoteDir, an
// existing folder) and back, and checks that the same bytes came back.
func copyRoundTrip(t *testing.T, file, remoteDir string) {
	local := t.TempDir()
	tree := map[string][]byte{
		"big.bin":           randomBytes(t, 3<<20+17),
		"empty.txt":         {},
		"sub/notes.txt":     []byte("line one\r\nline two\r\n"),
		"sub/deeper/x.yaml": []byte("a: 1\n"),
	}
	writeTree(t, filepath.Join(local, "folder"), tree)
	// A link to a folder above is skipped (it would never end). Windows
	// lets only privileged accounts make links.
	up := filepath.Join(local, "folder", "sub", "up")
	linked := os.Symlink("..", up) == nil
	if !linked && runtime.GOOS != "windows" {
		t.Fatal("cannot make a symbolic link")
	}
	sep := `\`
	if strings.HasPrefix(remoteDir, "/") {
		sep = "/"
	}

	code, out, errOut := run(t, "cp", "-c", file, filepath.Join(local, "folder"), "node1:"+remoteDir)
	if code != exitcode.OK {
		t.Fatalf("cp to the node: exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "copied 4 files") || linked && !strings.Contains(errOut, "skipped "+up+": a link to a folder") {
		t.Errorf("stderr lacks the summary:\n%s", errOut)
	}
	back := t.TempDir()
	code, out, errOut = run(t, "cp", "-c", file, "-o", "json", "node1:"+remoteDir+sep+"folder", filepath.Join(back, "again"))
	if code != exitcode.OK {
		t.Fatalf("cp from the node: exit %d\n%s\n%s", code, out, errOut)
	}
	checkTree(t, filepath.Join(back, "again"), tree)
	// A copied file gets the mode any new file gets here (0644 under
	// umask 022, as with scp), not a temporary file's 0600.
	ref := filepath.Join(t.TempDir(), "ref")
	if err := os.WriteFile(ref, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	refInfo, _ := os.Stat(ref)
	if got, err := os.Stat(filepath.Join(back, "again", "big.bin")); err != nil || got.Mode().Perm() != refInfo.Mode().Perm() {
		t.Errorf("a copied file's mode is %v, want %v (%v)", got.Mode().Perm(), refInfo.Mode().Perm(), err)
	}
	doc := decodeJSON[report.Copy](t, out)
	if doc.Kind != report.KindCopy || doc.APIVersion == "" || doc.Result != report.Changed || doc.CopyReport == nil ||
		doc.Direction != "from-node" || len(doc.Files) != 4 || doc.Bytes != 3<<20+17+20+5 || doc.Dirs != 3 {
		t.Errorf("json = %s", out)
	}

	// One file, into an existing folder and onto a new name.
	code, _, errOut = run(t, "cp", "-c", file, filepath.Join(local, "folder", "big.bin"), ":"+remoteDir+sep+"renamed.bin")
	if code != exitcode.OK {
		t.Fatalf("cp one file: exit %d\n%s", code, errOut)
	}
	code, _, errOut = run(t, "cp", "-c", file, "node1:"+remoteDir+sep+"renamed.bin", back)
	if code != exitcode.OK {
		t.Fatalf("cp one file back: exit %d\n%s", code, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(back, "renamed.bin")); !bytes.Equal(got, tree["big.bin"]) {
		t.Errorf("renamed.bin came back with %d bytes, want %d", len(got), len(tree["big.bin"]))
	}
	if leftovers, _ := filepath.Glob(filepath.Join(back, ".*swdt-part*")); len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"missing on the node", []string{"node1:" + remoteDir + sep + "nosuch.log", back},
			remoteDir + sep + "nosuch.log: no such file or directory on the node"},
		{"missing here", []string{filepath.Join(local, "nosuch"), "node1:" + remoteDir},
			filepath.Join(local, "nosuch") + ": no such file or directory (on this machine"},
		{"no folder on the node for the destination", []string{filepath.Join(local, "folder", "empty.txt"), "node1:" + remoteDir + sep + "no" + sep + "x.txt"},
			"the directory " + remoteDir + sep + "no does not exist on the node"},
		{"no folder here for the destination", []string{"node1:" + remoteDir + sep + "renamed.bin", filepath.Join(back, "no", "x")},
			"the directory " + filepath.Join(back, "no") + " does not exist on this machine"},
		{"two local paths", []string{back, local}, "one of"},
		{"unknown node", []string{"nodel:" + remoteDir, back}, `has no node "nodel"; did you mean "node1"?`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, append([]string{"cp", "-c", file}, tt.args...)...)
			if code != exitcode.Usage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %s\nwant exit %d and %q", code, errOut, exitcode.Usage, tt.want)
			}
		})
	}
}

func TestCpSimnode(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("node1", ts.Credentials()))
	copyRoundTrip(t, file, `C:\k`)
	if data, err := ts.Node().ReadFile(`C:\k\folder\sub\notes.txt`); err != nil || string(data) != "line one\r\nline two\r\n" {
		t.Errorf(`C:\k\folder\sub\notes.txt on the node: %q, %v`, data, err)
	}
}

func TestCpOpenSSH(t *testing.T) {
	t.Parallel()
	s := sshdtest.Start(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("node1", sshdCredentials(t, s)))
	copyRoundTrip(t, file, t.TempDir())

	// A destination with slashes stays a POSIX path: what swdt reports
	// writing into a folder is joined with a slash.
	local := t.TempDir()
	writeTree(t, local, map[string][]byte{"one.txt": []byte("1"), "tree/two.txt": []byte("2")})
	for _, tt := range []struct {
		name, src string
		want      []string
	}{
		{"a file into a folder", "one.txt", []string{"one.txt"}},
		{"a folder into a folder", "tree", []string{"tree/two.txt"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			remoteDir := t.TempDir()
			code, out, errOut := run(t, "cp", "-c", file, "-o", "json", filepath.Join(local, tt.src), "node1:"+remoteDir)
			if code != exitcode.OK {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			var got []string
			for _, f := range decodeJSON[report.Copy](t, out).Files {
				got = append(got, f.Path)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, remoteDir+"/"+w)
			}
			if !slices.Equal(got, want) {
				t.Errorf("files written %q, want %q", got, want)
			}
			for _, w := range tt.want {
				sent, _ := os.ReadFile(filepath.Join(local, w))
				if got, err := os.ReadFile(filepath.Join(remoteDir, w)); err != nil || !bytes.Equal(got, sent) {
					t.Errorf("%s on the node: %q, %v; want %q", w, got, err, sent)
				}
			}
		})
	}
}

// sshdCredentials are the credentials of a node that is the test's sshd.
func sshdCredentials(t *testing.T, s *sshdtest.Server) v1alpha1.CredentialsSpec {
	t.Helper()
	kh := filepath.Join(t.TempDir(), "known_hosts")
	if err := os.WriteFile(kh, []byte(s.KnownHostsLine()), 0o600); err != nil {
		t.Fatal(err)
	}
	return v1alpha1.CredentialsSpec{Hostname: s.Addr, Username: s.User, PrivateKey: s.KeyFile, KnownHostsFile: kh}
}

func TestParseCopyArg(t *testing.T) {
	t.Parallel()
	tests := []struct {
		arg  string
		want copyArg
	}{
		{`node1:C:\k\kubelet.log`, copyArg{remote: true, node: "node1", path: `C:\k\kubelet.log`}},
		{`:C:\k`, copyArg{remote: true, path: `C:\k`}},
		{`node1:`, copyArg{remote: true, node: "node1"}},
		{`node1:relative.txt`, copyArg{remote: true, node: "node1", path: "relative.txt"}},
		{`./logs`, copyArg{path: "./logs"}},
		{`C:\Users\me\logs`, copyArg{path: `C:\Users\me\logs`}},
		{`c:/tmp`, copyArg{path: `c:/tmp`}},
		{`./a:b`, copyArg{path: "./a:b"}},
		{`dir\a:b`, copyArg{path: `dir\a:b`}},
	}
	for _, tt := range tests {
		if got := parseCopyArg(tt.arg); got != tt.want {
			t.Errorf("parseCopyArg(%q) = %+v, want %+v", tt.arg, got, tt.want)
		}
	}
}

// A node's listing is not trusted: a name that is not one file name on
// every OS stops the copy before anything is written for it (a Linux
// sshd serves names a hostile Windows node could send), and a copy from
// the node stops at its bounds, naming the flag that raises them.
func TestCpFromHostileNode(t *testing.T) {
	s := sshdtest.Start(t)
	file := writeNodeFile(t, t.TempDir(), nodeHeader("node1", sshdCredentials(t, s)))
	for _, tt := range []struct {
		name  string
		tree  map[string][]byte
		flags []string
		want  string
	}{
		{"a name climbing out on Windows", map[string][]byte{`..\..\escaped`: []byte("x")}, nil, `"..\\..\\escaped" holds a path separator`},
		{"a drive", map[string][]byte{`C:x`: []byte("x")}, nil, `"C:x" holds one of`},
		{"a device name", map[string][]byte{"CON.txt": []byte("x")}, nil, "reserved Windows device name"},
		{"a control character", map[string][]byte{"bell\x07": []byte("x")}, nil, "control, format or direction character U+0007"},
		{"a direction character", map[string][]byte{"kubelet\u202Eexe.txt": []byte("x")}, nil, "U+202E"},
		{"too many entries", map[string][]byte{"a": {1}, "b": {2}, "c": {3}}, []string{"--max-entries", "3"}, "past 3 files and folders, its limit; nothing more was copied (raise it with --max-entries"},
		{"too deep", map[string][]byte{"1/2/3/x": {1}}, []string{"--max-depth", "2"}, "past 2 folder levels"},
		{"too many bytes", map[string][]byte{"a": make([]byte, 600), "b": make([]byte, 600)}, []string{"--max-bytes", "1Ki"}, "past 1024 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			remote, local := t.TempDir(), t.TempDir()
			writeTree(t, filepath.Join(remote, "tree"), tt.tree)
			dst := filepath.Join(local, "in", "copy")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"cp", "-c", file, "node1:" + filepath.Join(remote, "tree"), dst}, tt.flags...)
			code, _, errOut := run(t, args...)
			if code != exitcode.Failure || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit %d and %q", code, errOut, exitcode.Failure, tt.want)
			}
			// Nothing was written outside the destination, and nothing
			// under a name the node chose badly.
			err := filepath.WalkDir(local, func(p string, d os.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if rel, _ := filepath.Rel(dst, p); p != local && p != filepath.Dir(dst) && strings.HasPrefix(rel, "..") {
					t.Errorf("%s was written outside %s", p, dst)
				}
				if strings.ContainsAny(d.Name(), "\\\x07\u202E") || strings.HasPrefix(d.Name(), "CON") {
					t.Errorf("%s was written under the node's name", p)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}
