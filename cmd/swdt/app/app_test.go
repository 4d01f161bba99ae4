package app

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/config"
	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// run drives the whole CLI in-process.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb}, args)
	return code, out.String(), errb.String()
}

const (
	samples = "../../../samples"
	invalid = "../../../pkg/config/testdata/invalid"
)

// The samples name files on the reader's machine (~/.ssh/id_ed25519,
// ./bin/kubelet.exe), so they are validated without them;
// TestValidateLocalFiles checks them.
func TestValidateSamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob(filepath.Join(samples, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, out, errOut := run(t, "config", "validate", "-c", f, "--skip-local-files")
			if code != exitcode.OK {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			if !strings.HasPrefix(out, "NODE") || !strings.Contains(errOut, "is valid") {
				t.Errorf("stdout %q stderr %q", out, errOut)
			}
		})
	}
}

func TestValidateSummary(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "config", "validate", "-c", filepath.Join(samples, "node.yaml"), "--no-color", "--skip-local-files")
	want := "NODE       HOST                PROVISIONERS\nwinworker  192.168.122.220:22  2 (containerd, kubelet)\n"
	if code != 0 || out != want {
		t.Errorf("exit %d, stdout %q, want %q", code, out, want)
	}
}

func TestValidateInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"unknown-field.yaml", []string{
			`unknown-field.yaml:11: spec.kubernetes.provisioners[0].destinaton: unknown field "destinaton"`,
			`unknown-field.yaml:6: spec.credentials.Username: unknown field "Username"`,
		}},
		{"relative-destination.yaml", []string{
			`relative-destination.yaml:15: node "winworker": spec.kubernetes.provisioners[1].destination: Invalid value`,
		}},
		{"three-mistakes.yaml", []string{
			"three-mistakes.yaml:8: ", "three-mistakes.yaml:10: ", "three-mistakes.yaml:16: ", "3 problems",
		}},
		{"decode-and-validate.yaml", []string{
			`decode-and-validate.yaml:6: metadata.namespace: unknown field "namespace"`,
			`decode-and-validate.yaml:11: node "winworker": spec.credentials.hostKeyPolicy: Unsupported value`,
			`decode-and-validate.yaml:14: spec.setup.enableRDP: must be true or false`,
			"8 problems",
		}},
		{"wrong-apiversion-and-hostname.yaml", []string{
			`wrong-apiversion-and-hostname.yaml:1: apiVersion "windows.k8s.io/v1" is not supported`,
			`wrong-apiversion-and-hostname.yaml:7: node "win": spec.credentials.hostname: Invalid value`,
			"3 problems",
		}},
		{"empty.yaml", []string{"config file is empty"}},
		{"no-such-file.yaml", []string{"config file not found"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			// The files name sources that are not there: those problems
			// are TestValidateLocalFiles's.
			code, out, errOut := run(t, "config", "validate", "-c", filepath.Join(invalid, tt.file), "--skip-local-files")
			if code != exitcode.Usage {
				t.Errorf("exit %d, want %d", code, exitcode.Usage)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
	// Three mistakes are three error lines plus the count.
	_, _, errOut := run(t, "config", "validate", "-c", filepath.Join(invalid, "three-mistakes.yaml"), "--skip-local-files")
	if n := strings.Count(errOut, "✖ error:"); n != 4 {
		t.Errorf("%d error lines, want 3 problems + 1 summary:\n%s", n, errOut)
	}
}

func TestValidateJSON(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "config", "validate", "-o", "json", "-c", filepath.Join(samples, "two-nodes.yaml"), "--skip-local-files")
	var r report.Config
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if code != 0 || !r.Valid || len(r.Nodes) != 2 || r.Nodes[1].Host != "[fd00::22]" || r.Nodes[1].Port != 2222 {
		t.Errorf("exit %d, report %+v", code, r)
	}

	code, out, _ = run(t, "config", "validate", "-o", "json", "-c", filepath.Join(invalid, "three-mistakes.yaml"), "--skip-local-files")
	r = report.Config{}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out)
	}
	if code != exitcode.Usage || r.Valid || len(r.Problems) != 3 || r.Problems[2].Field != "spec.kubernetes.provisioners[0].sha256" {
		t.Errorf("exit %d, report %+v", code, r)
	}
}

func TestValidateWarnings(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(samples, "minimal.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "    privateKey: ~/.ssh/id_rsa\n", "    password: hunter2\n", 1))
	path := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "config", "validate", "-c", path, "--skip-local-files")
	if code != 0 || !strings.Contains(errOut, "! warning: "+path+":10: node \"sample\": spec.credentials.password") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(errOut, "hunter2") {
		t.Error("the password leaked into the output")
	}
}

// config validate reports the local files a node file names that are not
// there as problems; --skip-local-files does not look at them.
func TestValidateLocalFiles(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		args     []string
		code     int
		problems []string
		// lines counts the error lines: one a problem, and the count when
		// there are several.
		lines int
	}{
		{name: "none there", code: exitcode.Usage, lines: 6, problems: []string{
			"node.yaml:18: node \"winworker\": spec.credentials.privateKey: private key file HOME/.ssh/id_ed25519 does not exist",
			"node.yaml:34: node \"winworker\": spec.setup.authorizedKeys[0]: public key file HOME/.ssh/id_ed25519.pub does not exist",
			"node.yaml:41: node \"winworker\": spec.kubernetes.provisioners[0].sourceURL: source DIR/bin/containerd.exe does not exist",
			"node.yaml:55: node \"winworker\": spec.kubernetes.provisioners[1].sourceURL: source HOME/go/src/k8s.io/kubernetes/_output/local/bin/windows/amd64/kubelet.exe does not exist",
			"node.yaml:62: node \"winworker\": spec.wins.sourceURL: source DIR/bin/wins.exe does not exist",
			"5 problems",
		}},
		{name: "none there, not looked at", args: []string{"--skip-local-files"}, code: exitcode.OK},
		{name: "all there", code: exitcode.OK, files: []string{
			"HOME/.ssh/id_ed25519", "HOME/.ssh/id_ed25519.pub", "DIR/bin/containerd.exe", "DIR/bin/wins.exe",
			"HOME/go/src/k8s.io/kubernetes/_output/local/bin/windows/amd64/kubelet.exe",
		}},
		{name: "a directory", code: exitcode.Usage, lines: 1, files: []string{
			"HOME/.ssh/id_ed25519", "HOME/.ssh/id_ed25519.pub", "DIR/bin/containerd.exe/", "DIR/bin/wins.exe",
			"HOME/go/src/k8s.io/kubernetes/_output/local/bin/windows/amd64/kubelet.exe",
		}, problems: []string{
			"node.yaml:41: node \"winworker\": spec.kubernetes.provisioners[0].sourceURL: source DIR/bin/containerd.exe is a directory, not a file",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home, dir := t.TempDir(), t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("USERPROFILE", home)
			paths := strings.NewReplacer("HOME/", home+string(filepath.Separator), "DIR/", dir+string(filepath.Separator))
			path := filepath.Join(dir, "node.yaml")
			if err := os.WriteFile(path, config.Sample, 0o600); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.files {
				p := filepath.FromSlash(paths.Replace(f))
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
			code, _, errOut := run(t, append([]string{"config", "validate", "-c", path}, tt.args...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d:\n%s", code, tt.code, errOut)
			}
			for _, p := range tt.problems {
				if want := filepath.FromSlash(paths.Replace(p)); !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if n := strings.Count(errOut, "✖ error:"); n != tt.lines {
				t.Errorf("%d error lines, want %d:\n%s", n, tt.lines, errOut)
			}
		})
	}
}

func TestConfigPathFromEnv(t *testing.T) {
	t.Setenv("SWDT_CONFIG", filepath.Join(samples, "minimal.yaml"))
	if code, _, errOut := run(t, "config", "validate", "--skip-local-files"); code != 0 || !strings.Contains(errOut, "minimal.yaml is valid") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	t.Setenv("SWDT_CONFIG", "")
	t.Chdir(t.TempDir())
	if code, _, errOut := run(t, "config", "validate"); code != exitcode.Usage || !strings.Contains(errOut, "node.yaml: config file not found") {
		t.Errorf("default ./node.yaml: exit %d, stderr %q", code, errOut)
	}
}

func TestConfigInit(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	code, out, _ := run(t, "config", "init")
	if code != 0 || out != string(config.Sample) {
		t.Errorf("exit %d, stdout is not the sample", code)
	}
	if first, _, _ := strings.Cut(out, "\n"); first != "# yaml-language-server: $schema="+config.SchemaURL {
		t.Errorf("the first line is %q, not the yaml-language-server modeline", first)
	}

	path := filepath.Join(t.TempDir(), "node.yaml")
	code, out, errOut := run(t, "config", "init", "--output-file", path)
	if code != 0 || out != "" || !strings.Contains(errOut, "wrote "+path) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != string(config.Sample) {
		t.Fatalf("written file differs: %v", err)
	}
	if code, _, _ := run(t, "config", "validate", "-c", path, "--skip-local-files"); code != 0 {
		t.Errorf("the written sample does not validate")
	}
	// It names a source beside it, to be built.
	code, _, errOut = run(t, "config", "validate", "-c", path)
	if want := filepath.Join(filepath.Dir(path), "bin", "containerd.exe") + " does not exist"; code != exitcode.Usage || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, errOut)
	}

	if err := os.WriteFile(path, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "config", "init", "--output-file", path)
	if code != exitcode.Usage || !strings.Contains(errOut, "already exists") {
		t.Errorf("overwrite: exit %d, stderr %q", code, errOut)
	}
	if data, _ := os.ReadFile(path); string(data) != "mine" {
		t.Error("config init overwrote an existing file")
	}

	code, _, errOut = run(t, "config", "init", "-o", "node.yaml")
	if code != exitcode.Usage || !strings.Contains(errOut, "use --output-file") {
		t.Errorf("-o FILE: exit %d, stderr %q", code, errOut)
	}

	// A user with only an RSA key gets a sample that names it.
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"id_rsa", "id_rsa.pub"} {
		if err := os.WriteFile(filepath.Join(home, ".ssh", f), []byte("key"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	want, err := config.SampleWith(config.SampleOptions{PrivateKey: "~/.ssh/id_rsa"})
	if err != nil {
		t.Fatal(err)
	}
	if code, out, _ := run(t, "config", "init"); code != 0 || out != string(want) || !strings.Contains(out, "privateKey: ~/.ssh/id_rsa\n") {
		t.Errorf("with only ~/.ssh/id_rsa: exit %d, stdout:\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, _ := run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "swdt dev\ncommit: unknown\ngo: go") {
		t.Errorf("exit %d, stdout %q", code, out)
	}
	// It names the agent it deploys (make agent built it for the tests).
	if d, err := agentbin.Digest("amd64"); err != nil || !strings.Contains(out, "agent: windows/amd64 sha256:"+d+"\n") {
		t.Errorf("stdout %q does not name the embedded agent %s (%v)", out, d, err)
	}
	code, out, _ = run(t, "-o", "json", "version")
	var v report.Version
	if err := json.Unmarshal([]byte(out), &v); err != nil || code != 0 || v.Version != "dev" || v.Platform == "" {
		t.Errorf("exit %d, %+v, %v", code, v, err)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		msg  string
	}{
		{[]string{"bogus"}, `unknown command "bogus" for "swdt"`},
		{[]string{"config", "valdate"}, `did you mean "validate"?`},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"version", "extra"}, `unknown command "extra" for "swdt version"`},
		{[]string{"-o", "yaml", "version"}, `unknown output format "yaml"`},
		{[]string{"config", "validate", "-c"}, "flag needs an argument"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, errOut := run(t, tt.args...)
			if code != exitcode.Usage {
				t.Errorf("exit %d, want %d", code, exitcode.Usage)
			}
			if !strings.Contains(errOut, tt.msg) || strings.Count(errOut, "error:") != 1 {
				t.Errorf("stderr = %q, want one error containing %q", errOut, tt.msg)
			}
		})
	}
}

func TestHelpAndCompletion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--help"}, {"config"}, {"config", "validate", "--help"}} {
		code, out, _ := run(t, args...)
		if code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
	}
	code, out, _ := run(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: exit %d", code)
	}
	code, out, _ = run(t, "__complete", "-o", "")
	if code != 0 || !strings.Contains(out, "text\njson\n") {
		t.Errorf("completing -o: exit %d, %q", code, out)
	}
}

func TestVerboseLogs(t *testing.T) {
	t.Parallel()
	_, _, errOut := run(t, "-vv", "version")
	if !strings.Contains(errOut, "level=DEBUG") || !strings.Contains(errOut, "swdt starting") {
		t.Errorf("-vv stderr = %q", errOut)
	}
	if _, _, errOut := run(t, "version"); errOut != "" {
		t.Errorf("quiet run wrote to stderr: %q", errOut)
	}
}
