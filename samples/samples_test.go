// Package samples holds the sample node files of the README; its tests
// check that each one loads and shows what it claims to.
package samples

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
)

// TestSamplesLoad loads every sample with swdt's loader: strict decoding,
// defaults, validation, and no warnings.
func TestSamplesLoad(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	if err != nil || len(files) < 5 {
		t.Fatalf("samples: %v %v", files, err)
	}
	nodes := map[string]int{"full.yaml": 1, "minimal.yaml": 1, "node.yaml": 1, "two-nodes.yaml": 2, "wins.yaml": 1, "vm.yaml": 2, "rollout.yaml": 1}
	for _, f := range files {
		t.Run(f, func(t *testing.T) {
			res, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) > 0 {
				t.Errorf("warnings: %v", res.Warnings)
			}
			if want, ok := nodes[f]; ok && len(res.Nodes) != want {
				t.Errorf("%d nodes, want %d", len(res.Nodes), want)
			}
			if f == "wins.yaml" && res.Nodes[0].Spec.Wins == nil {
				t.Error("no spec.wins")
			}
			if f == "rollout.yaml" {
				if n := res.Nodes[0]; n.Spec.Kubernetes.Rollout == nil || n.Spec.Credentials.Hostname != "" {
					t.Errorf("want spec.kubernetes.rollout and no hostname: %+v", n.Spec)
				}
			}
			if f == "vm.yaml" {
				for _, n := range res.Nodes {
					if n.Spec.VM == nil || n.Spec.Credentials.Hostname != "" {
						t.Errorf("node %s: want spec.vm and no hostname", n.Name)
					}
				}
			}
		})
	}
}

// password and passwordEnv exclude each other; full.yaml sets passwordEnv.
// Its VM is a libvirt one, and the hyperv block goes only with provider
// hyperv (vm.yaml has one).
// maxUnavailable's Go fields are not the file's: it is a number or a
// string. The rollout's image goes only with transport Kubernetes, which
// takes no credentials (rollout.yaml has one); full.yaml's rollout uses SSH.
var notInFull = map[string]bool{"spec.credentials.password": true, "spec.vm.hyperv": true, "spec.vm.hyperv.host": true,
	"spec.kubernetes.rollout.image":               true,
	"spec.kubernetes.rollout.maxUnavailable.type": true, "spec.kubernetes.rollout.maxUnavailable.intVal": true, "spec.kubernetes.rollout.maxUnavailable.strVal": true}

// TestFullUsesEveryField checks that full.yaml sets every field of the
// Node API, so a new field cannot be added without a sample.
func TestFullUsesEveryField(t *testing.T) {
	have := fieldsIn(t, "full.yaml")
	var missing []string
	for _, f := range apiFields("spec", reflect.TypeFor[v1alpha1.NodeSpec]()) {
		if !have[f] && !notInFull[f] {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		t.Errorf("full.yaml does not set %s", strings.Join(missing, ", "))
	}
}

// TestMinimalIsTheExperimentsShape checks that minimal.yaml uses only
// fields of the SIG Windows dev-tools experiment, no swdt extension.
func TestMinimalIsTheExperimentsShape(t *testing.T) {
	extensions := []string{
		"spec.credentials.passwordEnv", "spec.credentials.knownHostsFile", "spec.credentials.hostKeyPolicy",
		"spec.setup.authorizedKeys", "spec.kubernetes.provisioners[].sha256",
		"spec.kubernetes.provisioners[].healthCheck", "spec.wins",
	}
	have := fieldsIn(t, "minimal.yaml")
	for _, e := range extensions {
		if have[e] {
			t.Errorf("minimal.yaml uses the extension %s", e)
		}
	}
}

// apiFields lists the JSON field paths of t under prefix; a slice adds [].
func apiFields(prefix string, t reflect.Type) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			prefix += "[]"
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := prefix + "." + name
		out = append(out, p)
		out = append(out, apiFields(p, f.Type)...)
	}
	sort.Strings(out)
	return out
}

// fieldsIn returns the field paths set in a sample's documents, in the
// form apiFields uses.
func fieldsIn(t *testing.T, file string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			break
		}
		collect(have, "", doc)
	}
	return have
}

func collect(have map[string]bool, prefix string, v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			have[p] = true
			collect(have, p, child)
		}
	case []any:
		for _, item := range v {
			if _, ok := item.(map[string]any); ok {
				collect(have, prefix+"[]", item)
			}
		}
	}
}
