package config

import (
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// strictInline is inlined into strictSample, as metav1.TypeMeta is into a
// Node.
type strictInline struct {
	Kind string `json:"kind"`
}

// strictSample has a field of every kind the decoder handles.
type strictSample struct {
	strictInline `json:",inline"`
	Name         string            `json:"name"`
	Count        int32             `json:"count,omitempty"`
	Enabled      *bool             `json:"enabled,omitempty"`
	Wait         metav1.Duration   `json:"wait,omitempty"`
	Items        []string          `json:"items,omitempty"`
	Password     string            `json:"password,omitempty"`
	Ignored      string            `json:"-"`
	Float        float64           `json:"float,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		check func(s strictSample) bool
		want  []want
	}{
		{name: "every kind", yaml: "kind: K\nname: n\ncount: 7\nenabled: false\nwait: 90s\nitems: [a, b]\n",
			check: func(s strictSample) bool {
				return s.Kind == "K" && s.Name == "n" && s.Count == 7 && s.Enabled != nil && !*s.Enabled &&
					s.Wait.Duration == 90*time.Second && len(s.Items) == 2 && s.Items[1] == "b"
			}},
		{name: "a map of strings", yaml: "labels:\n  example.com/team: sig-windows\n  tier: \"1\"\n",
			check: func(s strictSample) bool {
				return len(s.Labels) == 2 && s.Labels["example.com/team"] == "sig-windows" && s.Labels["tier"] == "1"
			}},
		{name: "map problems", yaml: "labels:\n  a: x\n  a: y\n  b: [c]\n",
			want: []want{{3, "labels[a]", `duplicate key "a" (first at line 2)`}, {4, "labels[b]", "must be a string (quote it), not a list"}}},
		{name: "null leaves the zero value", yaml: "name: ~\nenabled: null\nitems:\n",
			check: func(s strictSample) bool { return s.Name == "" && s.Enabled == nil && s.Items == nil }},
		{name: "scalars keep their YAML 1.2 meaning", yaml: "name: yes\nitems: [2001-12-14, on]\n",
			check: func(s strictSample) bool { return s.Name == "yes" && s.Items[0] == "2001-12-14" && s.Items[1] == "on" }},
		{name: "every problem at once", yaml: "name: 1.5\ncount: 2147483648\nenabled: yes\nitems: [a, [b]]\nwait: soon\nIgnored: x\n",
			want: []want{
				{1, "name", `must be a string (quote it), not the value "1.5"`},
				{2, "count", `must be a whole number from -2147483648 to 2147483647, not the value "2147483648"`},
				{3, "enabled", `must be true or false, not the value "yes"`},
				{4, "items[1]", "must be a string (quote it), not a list"},
				{5, "wait", `the value "soon" is not valid here: time: invalid duration "soon"`},
				{6, "Ignored", `unknown field "Ignored"`},
			}},
		{name: "a mapping where a string goes", yaml: "name:\n  first: a\n",
			want: []want{{1, "name", "must be a string (quote it), not a mapping"}}},
		{name: "a list where a mapping goes", yaml: "- a\n",
			want: []want{{1, "", "must be a mapping, not a list"}}},
		{name: "a secret is never shown", yaml: "password: [hunter2]\n",
			want: []want{{1, "password", "must be a string (quote it), not a list"}}},
		{name: "a secret of a type with its own decoding", yaml: "password: !!float hunter2\n",
			want: []want{{1, "password", "the value is not a valid !!float (not shown: it is a secret)"}}},
		{name: "merge keys", yaml: "base: &b {name: n}\n<<: *b\n",
			want: []want{{1, "base", `unknown field "base"`}, {2, "", "YAML merge keys (<<) are not supported"}}},
		{name: "a kind the Node API has no field of", yaml: "float: 1.5\n",
			want: []want{{1, "float", "swdt cannot decode a field of Go type float64: this is a bug in swdt"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc yaml.Node
			if err := yaml.Unmarshal([]byte(tt.yaml), &doc); err != nil {
				t.Fatal(err)
			}
			d := &decoder{file: "f.yaml"}
			var s strictSample
			d.decode(doc.Content[0], &s)
			if tt.check != nil && !tt.check(s) {
				t.Errorf("decoded %+v", s)
			}
			if len(d.problems) != len(tt.want) {
				t.Fatalf("problems %v, want %d", d.problems, len(tt.want))
			}
			for i, w := range tt.want {
				p := d.problems[i]
				if p.Line != w.line || p.Field != w.field || !strings.Contains(p.Message, w.msg) {
					t.Errorf("problem %d = %+v\nwant line %d field %q message containing %q", i, p, w.line, w.field, w.msg)
				}
				if strings.Contains(p.Message, "hunter2") {
					t.Errorf("the secret is in %q", p.Message)
				}
			}
		})
	}
}

func TestParent(t *testing.T) {
	for in, want := range map[string]string{
		"a.b.c": "a.b", "a.b[0]": "a.b", "a.b[0].c": "a.b[0]", "a": "", "": "",
	} {
		if got := parent(in); got != want {
			t.Errorf("parent(%q) = %q, want %q", in, got, want)
		}
	}
}
