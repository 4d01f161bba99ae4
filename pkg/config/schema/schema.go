// Package schema generates the JSON Schema of the Node API from its Go
// types and their doc comments, for editors (yaml-language-server) to
// complete and check node files. The schema checks the shape of a file:
// its fields, their types, what is required. swdt config validate checks
// the values too, and is the authority.
//
// The generated schema is checked in as schemas/node.schema.json; `make
// schema` (or go generate ./pkg/config/schema) writes it, and a test fails
// when it is stale.
package schema

//go:generate go run ../../../hack/genschema -api ../../../apis/config/v1alpha1 -o ../../../schemas/node.schema.json

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/config"
)

// Generate returns the JSON Schema of a node file: one Node or NodeList
// document (an editor applies it to each document of a file). apiDir is
// the directory of the Node API's source (apis/config/v1alpha1), whose doc
// comments become the descriptions.
func Generate(apiDir string) ([]byte, error) {
	comments, err := docComments(apiDir)
	if err != nil {
		return nil, err
	}
	r := &jsonschema.Reflector{
		// Fields without omitempty are required, as the loader requires
		// them; every object refuses unknown properties, as it does.
		AllowAdditionalProperties: false,
		CommentMap:                comments,
		Mapper:                    metadata,
	}
	node := r.Reflect(&v1alpha1.Node{})
	list := r.Reflect(&v1alpha1.NodeList{})
	defs := node.Definitions
	for name, def := range list.Definitions {
		defs[name] = def
	}
	if err := refine(defs); err != nil {
		return nil, err
	}
	required := &jsonschema.Schema{Required: []string{"apiVersion", "kind"}}
	root := &jsonschema.Schema{
		Version:     jsonschema.Version,
		ID:          jsonschema.ID(config.SchemaURL),
		Title:       "swdt node file",
		Description: "One Windows node that swdt drives over SSH (kind: Node), or several (kind: NodeList). Check a file with: swdt config validate -c FILE",
		Type:        "object",
		// A document is a Node or a NodeList, and says which; the items
		// of a NodeList may leave apiVersion and kind out.
		If:          withProps(&jsonschema.Schema{Required: []string{"kind"}}, prop{"kind", &jsonschema.Schema{Const: v1alpha1.KindNodeList}}),
		Then:        &jsonschema.Schema{AllOf: []*jsonschema.Schema{{Ref: "#/$defs/NodeList"}, required}},
		Else:        &jsonschema.Schema{AllOf: []*jsonschema.Schema{{Ref: "#/$defs/Node"}, required}},
		Definitions: defs,
	}
	data, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshal the schema: %w", err)
	}
	return append(data, '\n'), nil
}

// docComments reads the doc comments of the Node API's types and fields,
// keyed as jsonschema.Reflector.CommentMap wants them, as descriptions.
func docComments(apiDir string) (map[string]string, error) {
	r := &jsonschema.Reflector{}
	// AddGoComments keys the comments by path.Join(base, the directory
	// it found them in): with any base, the prefix below, which the
	// package's import path replaces.
	const base = "api"
	if err := r.AddGoComments(base, apiDir); err != nil {
		return nil, fmt.Errorf("read the doc comments of %s: %w", apiDir, err)
	}
	prefix := path.Join(base, filepath.Clean(apiDir)) + "."
	pkg := reflect.TypeFor[v1alpha1.Node]().PkgPath() + "."
	out := map[string]string{}
	for k, text := range r.CommentMap {
		name, ok := strings.CutPrefix(k, prefix)
		if !ok {
			continue
		}
		out[pkg+name] = description(text)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no doc comments of %s in %s: pass the directory of apis/config/v1alpha1", pkg, apiDir)
	}
	return out, nil
}

// description turns a doc comment into a description: marker lines
// (+optional, +k8s:...) dropped, the lines of each paragraph joined.
func description(comment string) string {
	var paras []string
	for _, para := range strings.Split(comment, "\n\n") {
		var words []string
		for _, l := range strings.Split(para, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "+") {
				words = append(words, l)
			}
		}
		if len(words) > 0 {
			paras = append(paras, strings.Join(words, " "))
		}
	}
	return strings.Join(paras, "\n\n")
}

// metadata gives the Kubernetes metadata types the fields a node file may
// set (see v1alpha1.ObjectMetaFields), all strings; a NodeList's metadata
// takes none; a metav1.Duration is written as a string.
func metadata(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeFor[metav1.ObjectMeta]():
		s := withProps(&jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.FalseSchema})
		for _, f := range v1alpha1.ObjectMetaFields() {
			s.Properties.Set(f, &jsonschema.Schema{Type: "string"})
		}
		return s
	case reflect.TypeFor[metav1.ListMeta]():
		return &jsonschema.Schema{Type: "object", AdditionalProperties: jsonschema.FalseSchema}
	case reflect.TypeFor[intstr.IntOrString]():
		return &jsonschema.Schema{OneOf: []*jsonschema.Schema{{Type: "integer"}, {Type: "string", Pattern: `^[0-9]+%$`}},
			Description: "A number, or a percentage such as 25%."}
	case reflect.TypeFor[metav1.Duration]():
		return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
			Description: "A duration such as 90s, 3m or 1h30m."}
	}
	return nil
}

// refine adds what the Go types cannot say: apiVersion and kind are
// constants, what metadata holds, a provisioner's healthCheck is one check
// or a list of them, a check sets exactly one field, and the host key
// policy is one of three.
func refine(defs jsonschema.Definitions) error {
	fields := []struct {
		def, field string
		refine     func(s *jsonschema.Schema)
	}{
		{"Node", "apiVersion", constant(v1alpha1.SchemeGroupVersion.String(), "The API version of node files.")},
		{"Node", "kind", constant(v1alpha1.KindNode, "Node: one node. (A NodeList holds several.)")},
		{"Node", "metadata", func(s *jsonschema.Schema) {
			s.Description = "Only metadata.name, the node's name in output."
			if name, ok := s.Properties.Get("name"); ok {
				name.Description = "The node's name in output. Default: the host part of spec.credentials.hostname."
			}
		}},
		{"NodeList", "apiVersion", constant(v1alpha1.SchemeGroupVersion.String(), "The API version of node files.")},
		{"NodeList", "kind", constant(v1alpha1.KindNodeList, "NodeList: several nodes, in items.")},
		{"NodeList", "metadata", func(s *jsonschema.Schema) {
			s.Description = "A NodeList's metadata takes no field: each item has its own metadata.name."
		}},
		{"ProvisionerSpec", "healthCheck", func(s *jsonschema.Schema) {
			list := *s
			list.Description = ""
			*s = jsonschema.Schema{Description: s.Description, OneOf: []*jsonschema.Schema{{Ref: "#/$defs/HealthCheck"}, &list}}
		}},
		{"CredentialsSpec", "hostKeyPolicy", func(s *jsonschema.Schema) {
			s.Enum = []any{v1alpha1.HostKeyPolicyStrict, v1alpha1.HostKeyPolicyAcceptNew, v1alpha1.HostKeyPolicyInsecure}
		}},
		{"RolloutSpec", "transport", func(s *jsonschema.Schema) {
			s.Enum = []any{v1alpha1.TransportKubernetes, v1alpha1.TransportSSH}
		}},
		{"VMSpec", "provider", func(s *jsonschema.Schema) {
			s.Enum = []any{v1alpha1.VMProviderLibvirt, v1alpha1.VMProviderHyperV}
		}},
	}
	for _, f := range fields {
		def := defs[f.def]
		if def == nil {
			return fmt.Errorf("the schema has no %s: update refine for the Node API's types", f.def)
		}
		s, ok := def.Properties.Get(f.field)
		if !ok {
			return fmt.Errorf("%s has no field %s: update refine for the Node API's types", f.def, f.field)
		}
		f.refine(s)
	}
	// A node with spec.vm may leave the hostname to its hypervisor, a
	// rollout to the cluster (whose Kubernetes transport takes no
	// credentials at all).
	creds, spec := defs["CredentialsSpec"], defs["NodeSpec"]
	if creds == nil || spec == nil {
		return fmt.Errorf("the schema has no CredentialsSpec or NodeSpec: update refine for the Node API's types")
	}
	creds.Required = slices.DeleteFunc(creds.Required, func(r string) bool { return r == "hostname" })
	spec.Required = slices.DeleteFunc(spec.Required, func(r string) bool { return r == "credentials" })
	withHostname := withProps(&jsonschema.Schema{Required: []string{"credentials"}}, prop{"credentials", &jsonschema.Schema{Required: []string{"hostname"}}})
	withRollout := withProps(&jsonschema.Schema{Required: []string{"kubernetes"}}, prop{"kubernetes", &jsonschema.Schema{Required: []string{"rollout"}}})
	spec.AnyOf = []*jsonschema.Schema{{Required: []string{"vm"}}, withHostname, withRollout}
	check := defs["HealthCheck"]
	if check == nil {
		return fmt.Errorf("the schema has no HealthCheck: update refine for the Node API's types")
	}
	one := uint64(1)
	check.MinProperties, check.MaxProperties = &one, &one
	check.Description += " Exactly one of its fields is set."
	return nil
}

// constant makes a string field take one value.
func constant(v, description string) func(s *jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		s.Type, s.Const, s.Description = "", v, description
	}
}

// withProps sets the properties of s, in order, and returns s.
func withProps(s *jsonschema.Schema, props ...prop) *jsonschema.Schema {
	s.Properties = jsonschema.NewProperties()
	for _, p := range props {
		s.Properties.Set(p.name, p.schema)
	}
	return s
}

// prop is one property of a schema.
type prop struct {
	name   string
	schema *jsonschema.Schema
}
