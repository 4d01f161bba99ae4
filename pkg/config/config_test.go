package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/exitcode"
)

// want is one expected problem: its line, field and a part of its message.
type want struct {
	line  int
	field string
	msg   string
}

func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		file string
		want []want
	}{
		{"empty.yaml", []want{{0, "", "config file is empty"}}},
		{"comments-only.yaml", []want{{0, "", "no nodes"}}},
		{"binary.yaml", []want{{0, "", "not a text file (binary data at byte 47)"}}},
		{"invalid-utf8.yaml", []want{{0, "", "not a text file (binary data at byte 0)"}}},
		{"syntax.yaml", []want{{3, "", "YAML syntax error at or after this line: did not find expected key"}}},
		{"syntax-second-doc.yaml", []want{{9, "", "YAML syntax error"}}},
		{"not-mapping.yaml", []want{{1, "", "expected a Node or NodeList document (a mapping with apiVersion and kind), found a list"}}},
		{"missing-apiversion.yaml", []want{{1, "", "apiVersion is missing: set apiVersion: windows.k8s.io/v1alpha1"}}},
		{"wrong-apiversion.yaml", []want{{1, "", `apiVersion "windows.k8s.io/v1" is not supported: use windows.k8s.io/v1alpha1`}}},
		{"missing-kind.yaml", []want{{1, "", "kind is missing"}}},
		// A wrong apiVersion or kind does not hide the file's other
		// problems: the document is read as this version's Node.
		{"wrong-apiversion-and-hostname.yaml", []want{
			{1, "", `apiVersion "windows.k8s.io/v1" is not supported: use windows.k8s.io/v1alpha1`},
			{2, "", `kind "Nodes" is not supported: use Node or NodeList`},
			{7, "spec.credentials.hostname", "port must be a number from 1 to 65535"},
		}},
		{"wrong-kind.yaml", []want{{2, "", `kind "Pod" is not supported: use Node or NodeList`}}},
		{"unknown-field.yaml", []want{
			{6, "spec.credentials.Username", `unknown field "Username": did you mean "username"?`},
			{11, "spec.kubernetes.provisioners[0].destinaton", `unknown field "destinaton": did you mean "destination"?`},
		}},
		{"duplicate-key.yaml", []want{{6, "spec.credentials.hostname", `duplicate key "hostname" (first at line 5): remove one`}}},
		{"type-mismatch.yaml", []want{{7, "spec.setup.enableRDP", `must be true or false, not the value "yes"`}}},
		{"type-list.yaml", []want{{7, "spec.setup.chocoPackages", `must be a list, not the value "vim"`}}},
		{"relative-destination.yaml", []want{
			{15, "spec.kubernetes.provisioners[1].destination", "must be an absolute Windows path"},
		}},
		{"three-mistakes.yaml", []want{
			{8, "spec.credentials.hostKeyPolicy", `Unsupported value: "trust-me"`},
			{10, "spec.setup.chocoPackages[0]", "must be a Chocolatey package id"},
			{16, "spec.kubernetes.provisioners[0].sha256", "must be 64 hexadecimal digits"},
		}},
		{"missing-spec-fields.yaml", []want{
			{6, "spec.credentials.hostname", "Required value"},
			{10, "spec.kubernetes.provisioners[0].sourceURL", "Required value"},
			{10, "spec.kubernetes.provisioners[0].destination", "Required value"},
		}},
		{"duplicate-names.yaml", []want{{12, "metadata.name", `Duplicate value: "win"`}}},
		{"nodelist-bad-item.yaml", []want{{8, "items[1].kind", `kind "Pod" is not supported in a NodeList`}}},
		{"nodelist-invalid-item.yaml", []want{{13, "items[1].spec.credentials.hostname", "port must be a number from 1 to 65535"}}},
		{"tilde-user.yaml", []want{{6, "spec.credentials.privateKey", "only ~ (your own home directory) is supported"}}},
		{"health-check-typo.yaml", []want{
			{14, "spec.kubernetes.provisioners[0].healthCheck[0].namedPipes", `unknown field "namedPipes": did you mean "namedPipe"?`},
		}},
		// Aliases are expanded within a budget, before anything else reads
		// the document: a cycle used to overflow the stack, and 410 bytes
		// of nested aliases to expand into 387 million strings.
		{"alias-cycle.yaml", []want{{4, "", "YAML alias *loop is inside the value of its own anchor &loop"}}},
		{"alias-billion-laughs.yaml", []want{{8, "", "YAML aliases expand to more than 10000 values (here, at alias *d)"}}},
		{"deep-nesting.yaml", []want{{4, "", "YAML values are nested more than 100 levels deep"}}},
		// Decoding does not stop at the first problem, and validation runs
		// after it: every problem of the file is listed at once, but a
		// value that could not be decoded is not reported again as
		// missing or invalid.
		{"decode-and-validate.yaml", []want{
			{6, "metadata.namespace", `unknown field "namespace": a node's metadata takes only name: remove it`},
			{7, "metadata.labels", `unknown field "labels": a node's metadata takes only name`},
			{11, "spec.credentials.hostKeyPolicy", `Unsupported value: "trust-me"`},
			{12, "spec.credentials.port", `unknown field "port"`},
			{14, "spec.setup.enableRDP", `must be true or false, not the value "yes"`},
			{15, "spec.setup.chocoPackages[0]", "must be a Chocolatey package id"},
			{19, "spec.kubernetes.provisioners[0].sourceURL", "must be a string (quote it), not a list"},
			{22, "spec.kubernetes.provisioners[0].healthCheck[0].tcpPort",
				`must be a whole number from -2147483648 to 2147483647, not the value "99999999999"`},
		}},
		// What one document's decoding leaves out does not hide the same
		// field's problem in another.
		{"decode-two-docs.yaml", []want{
			{7, "spec.credentials.hostname", "must be a string (quote it), not a list"},
			{14, "spec.credentials.hostname", "Required value"},
		}},
		{"nodelist-metadata.yaml", []want{
			{4, "metadata.resourceVersion", `unknown field "resourceVersion": a NodeList's metadata takes no field`},
			{8, "items[0].metadata.nmae", `unknown field "nmae": did you mean "name"?`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "invalid", tt.file)
			checkProblems(t, path, tt.want)
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "node.yaml")
	_, err := Load(missing)
	checkErr(t, err, missing, "config file not found")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: errors.Is(err, fs.ErrNotExist) = false for %v", err)
	}
	_, err = Load(dir)
	checkErr(t, err, dir, "is a directory, not a config file")

	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(big)
	checkErr(t, err, big, "is larger than 1 MiB")
}

// A file that never ends (a device, a pipe) is read no further than the
// size limit.
func TestLoadEndlessFile(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero here")
	}
	_, err := Load("/dev/zero")
	checkErr(t, err, "/dev/zero", "is larger than 1 MiB")
}

// Anchors and aliases within the budget load as if written out.
func TestLoadAliases(t *testing.T) {
	res := mustLoad(t, filepath.Join("testdata", "valid", "aliases.yaml"))
	n := res.Nodes[0]
	p := n.Spec.Kubernetes.Provisioners
	if len(p) != 2 || len(p[1].HealthChecks) != 1 || p[1].HealthChecks[0].TCPPort != 10250 {
		t.Errorf("provisioners = %+v, want kube-proxy with the aliased health check", p)
	}
	if n.Spec.Wins == nil || n.Spec.Wins.SourceURL != p[0].SourceURL {
		t.Errorf("wins = %+v, want the aliased sourceURL %s", n.Spec.Wins, p[0].SourceURL)
	}
}

func checkErr(t *testing.T, err error, path, msg string) {
	t.Helper()
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("Load(%s) error = %v, want *config.Error", path, err)
	}
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("exit code = %d, want %d", exitcode.Code(err), exitcode.Usage)
	}
	if len(cerr.Problems) != 1 || !strings.Contains(cerr.Problems[0].Message, msg) || cerr.Problems[0].File != path {
		t.Errorf("problems = %v, want one in %s containing %q", cerr.Problems, path, msg)
	}
}

func checkProblems(t *testing.T, path string, wants []want) {
	t.Helper()
	res, err := Load(path)
	if err == nil {
		t.Fatalf("Load(%s) = %+v, want an error", path, res)
	}
	if exitcode.Code(err) != exitcode.Usage {
		t.Errorf("exit code = %d, want %d", exitcode.Code(err), exitcode.Usage)
	}
	var cerr *Error
	if !errors.As(err, &cerr) {
		t.Fatalf("error %v is not a *config.Error", err)
	}
	if len(cerr.Problems) != len(wants) {
		t.Fatalf("got %d problems, want %d:\n%v", len(cerr.Problems), len(wants), err)
	}
	for i, w := range wants {
		p := cerr.Problems[i]
		if p.File != path || p.Line != w.line || p.Field != w.field || !strings.Contains(p.Message, w.msg) {
			t.Errorf("problem %d = %+v\nwant line %d field %q message containing %q", i, p, w.line, w.field, w.msg)
		}
		if !strings.Contains(err.Error(), p.String()) {
			t.Errorf("Error() = %q does not list %q", err.Error(), p.String())
		}
	}
}

func TestLoadExperimentShape(t *testing.T) {
	path := filepath.Join("testdata", "valid", "experiment.yaml")
	res := mustLoad(t, path)
	if len(res.Nodes) != 1 {
		t.Fatalf("got %d nodes", len(res.Nodes))
	}
	n := res.Nodes[0]
	dir := filepath.Dir(res.Path)
	c := n.Spec.Credentials
	if n.Name != "sample" || n.Kind != "Node" || c.Hostname != "10.0.0.5:22" || c.Username != "Administrator" || c.Password != "s3cret" {
		t.Errorf("credentials = %+v", n)
	}
	if host, port := c.HostPort(); host != "10.0.0.5" || port != 22 {
		t.Errorf("HostPort = %s, %d", host, port)
	}
	if !*n.Spec.Setup.EnableRDP || !slices.Equal(n.Spec.Setup.ChocoPackages, []string{"vim", "grep"}) {
		t.Errorf("setup = %+v", n.Spec.Setup)
	}
	p := n.Spec.Kubernetes.Provisioners
	if len(p) != 2 || p[0].Name != "containerd" || p[0].Version != "1.7.11" || !p[0].Overwrite ||
		p[0].Destination != `C:\Program Files\containerd\bin\containerd.exe` ||
		p[0].SourceURL != filepath.Join(dir, "bin", "containerd.exe") ||
		p[1].Destination != `C:\k\kubelet.exe` || p[1].SourceURL != filepath.Join(dir, "bin", "kubelet.exe") {
		t.Errorf("provisioners = %+v", p)
	}
}

// The example of DESIGN.md §2 loads as written, with healthCheck as one
// check rather than a list.
func TestLoadDesignExample(t *testing.T) {
	t.Setenv("SWDT_PASSWORD", "from-env")
	res := mustLoad(t, filepath.Join("testdata", "valid", "design.yaml"))
	p := res.Nodes[0].Spec.Kubernetes.Provisioners
	if len(p) != 2 || len(p[0].HealthChecks) != 1 || p[0].HealthChecks[0].NamedPipe != "containerd-containerd" || len(p[1].HealthChecks) != 0 {
		t.Fatalf("provisioners = %+v", p)
	}
	if w := res.Nodes[0].Spec.Wins; w == nil || w.WhiteList.ProxyPorts[0] != 9796 {
		t.Fatalf("wins = %+v", w)
	}
}

func TestLoadMultiDocAndNodeList(t *testing.T) {
	tests := []struct {
		file  string
		names []string
		hosts []string
	}{
		{"multi-doc.yaml", []string{"one", "fd00::2", "three"}, []string{"one.example.com", "[fd00::2]:2222", "10.0.0.3"}},
		{"nodelist.yaml", []string{"win-a", "win-b"}, []string{"10.0.0.10", "10.0.0.11:2200"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			res := mustLoad(t, filepath.Join("testdata", "valid", tt.file))
			var names, hosts []string
			for _, n := range res.Nodes {
				names = append(names, n.Name)
				hosts = append(hosts, n.Spec.Credentials.Hostname)
				if n.APIVersion != v1alpha1.SchemeGroupVersion.String() || n.Kind != v1alpha1.KindNode {
					t.Errorf("node %s has TypeMeta %+v", n.Name, n.TypeMeta)
				}
			}
			if !slices.Equal(names, tt.names) || !slices.Equal(hosts, tt.hosts) {
				t.Errorf("names %v hosts %v, want %v %v", names, hosts, tt.names, tt.hosts)
			}
		})
	}
}

func TestLoadNodeListDefaults(t *testing.T) {
	res := mustLoad(t, filepath.Join("testdata", "valid", "nodelist.yaml"))
	if *res.Nodes[1].Spec.Setup.EnableRDP || !*res.Nodes[0].Spec.Setup.EnableRDP {
		t.Errorf("enableRDP: explicit false must stay false, missing must default to true")
	}
}

func TestLoadResolvesPaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("USERPROFILE", home)
	res := mustLoad(t, filepath.Join("testdata", "valid", "paths.yaml"))
	dir := filepath.Dir(res.Path)
	n := res.Nodes[0]
	check := func(field, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
	check("privateKey", n.Spec.Credentials.PrivateKey, filepath.Join(dir, "keys", "id_ed25519"))
	check("knownHostsFile", n.Spec.Credentials.KnownHostsFile, filepath.Join(home, "custom_known_hosts"))
	keys := n.Spec.Setup.AuthorizedKeys
	check("authorizedKeys[0]", keys[0], filepath.Join(home, ".ssh", "id_ed25519.pub"))
	check("authorizedKeys[1]", keys[1], filepath.Clean("/etc/swdt/team.pub"))
	check("authorizedKeys[2]", keys[2], filepath.Join(filepath.Dir(dir), "shared.pub"))
	p := n.Spec.Kubernetes.Provisioners
	check("a", p[0].SourceURL, filepath.Join(dir, "bin", "a.exe"))
	check("b", p[1].SourceURL, "file:///opt/bin/b.exe")
	check("c", p[2].SourceURL, "https://dl.k8s.io/release/v1.33.0/bin/windows/amd64/kubelet.exe")
	if runtime.GOOS != "windows" {
		check("d", p[3].SourceURL, "/abs/d.exe")
	}
	check("wins", n.Spec.Wins.SourceURL, filepath.Join(home, "wins.exe"))
	check("wins destination", n.Spec.Wins.Destination, v1alpha1.DefaultWinsDestination)

	// An unset knownHostsFile stays empty: ~/.ssh/config may name one.
	res = mustLoad(t, filepath.Join("testdata", "valid", "experiment.yaml"))
	check("unset knownHostsFile", res.Nodes[0].Spec.Credentials.KnownHostsFile, "")
}

func TestLoadWarnings(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no group/other mode bits")
	}
	data, err := os.ReadFile(filepath.Join("testdata", "valid", "experiment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "node.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res := mustLoad(t, path)
	if len(res.Warnings) != 1 || res.Warnings[0].Field != "spec.credentials.password" ||
		!strings.Contains(res.Warnings[0].Message, "chmod 600") {
		t.Errorf("warnings = %+v, want one about the password's file mode", res.Warnings)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if res := mustLoad(t, path); len(res.Warnings) != 0 {
		t.Errorf("warnings for a 0600 file: %+v", res.Warnings)
	}

	insecure := strings.Replace(string(data), "    password:", "    hostKeyPolicy: insecure\n    password:", 1)
	if err := os.WriteFile(path, []byte(insecure), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := mustLoad(t, path); len(res.Warnings) != 1 || res.Warnings[0].Line != 9 {
		t.Errorf("warnings = %+v, want one about hostKeyPolicy insecure at line 9", res.Warnings)
	}
}

// TestSamples loads every file in samples/; they are the documentation.
func TestSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, f := range files {
		mustLoad(t, f)
	}
}

// TestSampleMatchesEmbedded keeps `swdt config init` and samples/node.yaml
// the same file.
func TestSampleMatchesEmbedded(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "samples", "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(Sample) {
		t.Error("samples/node.yaml differs from pkg/config/sample.yaml: copy one over the other")
	}
	// Editors with yaml-language-server complete and check what
	// `swdt config init` writes.
	if modeline := "# yaml-language-server: $schema=" + SchemaURL + "\n"; !strings.HasPrefix(string(Sample), modeline) {
		t.Errorf("the sample does not start with %q", modeline)
	}
}

func mustLoad(t *testing.T, path string) *Result {
	t.Helper()
	res, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return res
}

func TestSuggest(t *testing.T) {
	for in, want := range map[string]string{
		"destinaton":   "destination",
		"Hostname":     "hostname",
		"chocoPackge":  "chocoPackages",
		"healthChecks": "healthCheck",
		"zzzzzz":       "",
	} {
		if got := suggest(in); got != want {
			t.Errorf("suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

// DESIGN.md §9: a secret never appears in a problem, whatever its YAML
// type; the problem still says what is wrong and where.
func TestSecretNeverInProblems(t *testing.T) {
	tests := []struct {
		name, yaml, leak, msg string
	}{
		{"number", "8675309", "8675309", "must be a string (quote it), not a number"},
		{"negative number", "-8675309", "8675309", "must be a string (quote it), not a number"},
		{"float", "8675309.5", "8675309", "must be a string (quote it), not a number"},
		{"octal", "0o755", "755", "must be a string (quote it), not a number"},
		{"string", "yes-no-true", "", ""}, // valid: nothing to report
		{"bool", "true", "true", "must be a string (quote it), not a boolean"},
		{"null tag", "!!null", "", ""},      // empty: valid
		{"timestamp", "2001-12-14", "", ""}, // kept as written: valid
		{"invalid tagged int", "!!int x8675309", "8675309", "is not a valid !!int"},
		{"anchored number", "&pw 8675309", "8675309", "must be a string (quote it), not a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "apiVersion: windows.k8s.io/v1alpha1\nkind: Node\nspec:\n  credentials:\n    hostname: 10.0.0.5\n    password: " + tt.yaml + "\n"
			path := filepath.Join(t.TempDir(), "node.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if tt.msg == "" {
				if err != nil {
					t.Fatalf("Load = %v, want no error", err)
				}
				return
			}
			var cerr *Error
			if !errors.As(err, &cerr) || len(cerr.Problems) != 1 {
				t.Fatalf("Load = %v, want one problem", err)
			}
			p := cerr.Problems[0]
			if p.Line != 6 || !strings.Contains(p.Message, tt.msg) {
				t.Errorf("problem = %+v, want line 6 and a message containing %q", p, tt.msg)
			}
			// The temporary directory's random name may hold the digits.
			if strings.Contains(strings.ReplaceAll(err.Error(), path, "FILE"), tt.leak) {
				t.Errorf("the password's value %q is in the error: %v", tt.leak, err)
			}
		})
	}
}
