package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"sigs.k8s.io/swdt/pkg/config"
)

const (
	root       = "../../.."
	schemaFile = "schemas/node.schema.json"
)

// TestSchemaUpToDate fails when schemas/node.schema.json is not what the
// Node API's types generate.
func TestSchemaUpToDate(t *testing.T) {
	want, err := Generate(filepath.Join(root, "apis", "config", "v1alpha1"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(root, schemaFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.ReplaceAll(got, []byte("\r\n"), []byte("\n")), want) {
		t.Errorf("%s is stale: run 'make schema' and commit it", schemaFile)
	}
	if !strings.HasSuffix(config.SchemaURL, "/"+schemaFile) {
		t.Errorf("config.SchemaURL %s does not name %s", config.SchemaURL, schemaFile)
	}
}

// compile compiles the checked-in schema.
func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(filepath.Join(root, schemaFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(config.SchemaURL, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(config.SchemaURL)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// documents returns the documents of a YAML file as JSON values, as an
// editor checks them.
func documents(t *testing.T, data []byte) []any {
	t.Helper()
	var docs []any
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			continue
		}
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, doc)
	}
}

// Every sample, and every file the loader accepts in its tests, is valid
// under the schema.
func TestValidFilesMatchSchema(t *testing.T) {
	s := compile(t)
	var files []string
	for _, pattern := range []string{"samples/*.yaml", "pkg/config/testdata/valid/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: %v %v", pattern, m, err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs := documents(t, data)
			if len(docs) == 0 {
				t.Fatal("no documents")
			}
			for i, doc := range docs {
				if err := s.Validate(doc); err != nil {
					t.Errorf("document %d: %v", i+1, err)
				}
			}
		})
	}
}

// What the schema can see is wrong fails it, with the place named.
func TestInvalidFilesFailSchema(t *testing.T) {
	s := compile(t)
	const node = "apiVersion: windows.k8s.io/v1alpha1\nkind: Node\nspec:\n  credentials:\n    hostname: 10.0.0.5\n"
	tests := []struct {
		name, yaml string
		// want is part of the validation error: the place or the cause.
		want string
	}{
		{"unknown field", strings.Replace(node, "hostname:", "Hostname:", 1), "'Hostname'"},
		{"metadata other than name", node + "metadata:\n  name: a\n  namespace: default\n", "'namespace'"},
		{"labels", node + "metadata:\n  labels: {a: b}\n", "'labels'"},
		{"a NodeList's metadata", "apiVersion: windows.k8s.io/v1alpha1\nkind: NodeList\nmetadata: {name: x}\nitems: []\n", "'name'"},
		{"wrong type", node + "  setup:\n    enableRDP: yes\n", "/spec/setup/enableRDP"},
		{"a list where a string goes", node + "  setup:\n    chocoPackages: vim\n", "/spec/setup/chocoPackages"},
		{"missing hostname", strings.Replace(node, "hostname:", "username:", 1), "'hostname'"},
		{"missing apiVersion", strings.Replace(node, "apiVersion: windows.k8s.io/v1alpha1\n", "", 1), "'apiVersion'"},
		{"wrong apiVersion", strings.Replace(node, "v1alpha1", "v1", 1), "/apiVersion"},
		{"wrong kind", strings.Replace(node, "kind: Node", "kind: Pod", 1), "/kind"},
		{"unknown host key policy", node + "    hostKeyPolicy: trust-me\n", "/spec/credentials/hostKeyPolicy"},
		{"two fields in one health check", node + "  kubernetes:\n    provisioners:\n    - name: kubelet\n      sourceURL: ./kubelet.exe\n" +
			"      destination: 'C:\\k\\kubelet.exe'\n      healthCheck: {tcpPort: 10250, namedPipe: p}\n", "/spec/kubernetes/provisioners/0/healthCheck"},
		{"a provisioner without destination", node + "  kubernetes:\n    provisioners:\n    - name: kubelet\n      sourceURL: ./kubelet.exe\n", "'destination'"},
		{"an item that is not a Node", "apiVersion: windows.k8s.io/v1alpha1\nkind: NodeList\nitems:\n- kind: Pod\n  spec: {credentials: {hostname: h}}\n", "/items/0/kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := documents(t, []byte(tt.yaml))
			err := s.Validate(docs[0])
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Validate = %v, want an error with %q", err, tt.want)
			}
		})
	}

	// The loader's invalid files that the schema can see through fail it
	// too.
	for _, f := range []string{
		"unknown-field.yaml", "type-mismatch.yaml", "type-list.yaml", "missing-apiversion.yaml", "missing-kind.yaml",
		"wrong-apiversion.yaml", "wrong-kind.yaml", "health-check-typo.yaml", "missing-spec-fields.yaml",
		"nodelist-bad-item.yaml", "nodelist-metadata.yaml", "decode-and-validate.yaml",
	} {
		t.Run(f, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, "pkg", "config", "testdata", "invalid", f))
			if err != nil {
				t.Fatal(err)
			}
			var failed bool
			for _, doc := range documents(t, data) {
				failed = failed || s.Validate(doc) != nil
			}
			if !failed {
				t.Error("valid under the schema")
			}
		})
	}
}
