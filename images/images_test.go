package images

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// templates parses every Packer template of the directory.
func templates(t *testing.T) map[string]*hclsyntax.Body {
	t.Helper()
	files, err := filepath.Glob("*.pkr.hcl")
	if err != nil || len(files) < 2 {
		t.Fatalf("templates: %v %v", files, err)
	}
	p := hclparse.NewParser()
	bodies := map[string]*hclsyntax.Body{}
	for _, f := range files {
		file, diags := p.ParseHCLFile(f)
		if diags.HasErrors() {
			t.Fatalf("%s: %s", f, diags.Error())
		}
		bodies[f] = file.Body.(*hclsyntax.Body)
	}
	return bodies
}

// references lists the names used as root.NAME anywhere in body.
func references(body *hclsyntax.Body, root string) map[string][]hcl.Range {
	refs := map[string][]hcl.Range{}
	_ = hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		expr, ok := n.(*hclsyntax.ScopeTraversalExpr)
		if !ok || expr.Traversal.RootName() != root || len(expr.Traversal) < 2 {
			return nil
		}
		if attr, ok := expr.Traversal[1].(hcl.TraverseAttr); ok {
			refs[attr.Name] = append(refs[attr.Name], expr.Range())
		}
		return nil
	})
	return refs
}

// TestTemplatesDeclareWhatTheyUse checks that every var.X and local.X a
// template uses is declared, and that every variable is used.
func TestTemplatesDeclareWhatTheyUse(t *testing.T) {
	bodies := templates(t)
	variables, locals := map[string]bool{}, map[string]bool{}
	for _, body := range bodies {
		for _, b := range body.Blocks {
			switch b.Type {
			case "variable":
				variables[b.Labels[0]] = true
			case "locals":
				for name := range b.Body.Attributes {
					locals[name] = true
				}
			}
		}
	}
	used := map[string]bool{}
	for _, body := range bodies {
		for v, ranges := range references(body, "var") {
			used[v] = true
			if !variables[v] {
				t.Errorf("%s: var.%s is not declared", ranges[0], v)
			}
		}
		for l, ranges := range references(body, "local") {
			if !locals[l] {
				t.Errorf("%s: local.%s is not declared", ranges[0], l)
			}
		}
	}
	for v := range variables {
		if !used[v] {
			t.Errorf("variable %s is declared but never used", v)
		}
	}
}

// TestTemplateFilesExist checks that every ${path.root}/... a template
// names is in the directory, and that the answer files' ${placeholders}
// are what templatefile gives them (local.unattend_vars).
func TestTemplateFilesExist(t *testing.T) {
	rootRef := regexp.MustCompile(`\$\{path\.root\}/([^"]+)"`)
	var unattendVars []string
	for name, body := range templates(t) {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rootRef.FindAllStringSubmatch(string(src), -1) {
			if _, err := os.Stat(m[1]); err != nil {
				t.Errorf("%s names %s: %v", name, m[1], err)
			}
		}
		for _, b := range body.Blocks {
			if b.Type != "locals" {
				continue
			}
			if attr, ok := b.Body.Attributes["unattend_vars"]; ok {
				obj, ok := attr.Expr.(*hclsyntax.ObjectConsExpr)
				if !ok {
					t.Fatalf("%s: local.unattend_vars is not an object", attr.Range())
				}
				for _, item := range obj.Items {
					key, diags := item.KeyExpr.Value(nil)
					if diags.HasErrors() {
						t.Fatal(diags.Error())
					}
					unattendVars = append(unattendVars, key.AsString())
				}
			}
		}
	}
	sort.Strings(unattendVars)
	placeholder := regexp.MustCompile(`\$\{(\w+)\}`)
	for _, f := range unattendFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range placeholder.FindAllStringSubmatch(string(data), -1) {
			if !slices.Contains(unattendVars, m[1]) {
				t.Errorf("%s uses ${%s}; templatefile gives it %v", f, m[1], unattendVars)
			}
		}
	}
}

func unattendFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".xml" {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 2 {
		t.Fatalf("answer files: %v %v", files, err)
	}
	return files
}

// TestUnattendWellFormed reads every XML file to its end.
func TestUnattendWellFormed(t *testing.T) {
	for _, f := range unattendFiles(t) {
		t.Run(f, func(t *testing.T) {
			r, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			dec := xml.NewDecoder(r)
			root := ""
			for {
				tok, err := dec.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("%s: not well-formed: %v", f, err)
				}
				if se, ok := tok.(xml.StartElement); ok && root == "" {
					root = se.Name.Space + " " + se.Name.Local
				}
			}
			if root != "urn:schemas-microsoft-com:unattend unattend" {
				t.Errorf("%s: root element %q, want an unattend answer file", f, root)
			}
		})
	}
}
