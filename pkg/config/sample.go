package config

import _ "embed"

// SchemaURL is where the JSON Schema of node files is published: the
// repository's schemas/node.schema.json on its main branch (the module
// sigs.k8s.io/swdt is github.com/kubernetes-sigs/swdt). Sample's first
// line points yaml-language-server at it.
const SchemaURL = "https://raw.githubusercontent.com/kubernetes-sigs/swdt/main/schemas/node.schema.json"

// Sample is a commented node file using every field, printed by
// `swdt config init`. samples/node.yaml is a copy (a test keeps them equal).
//
//go:embed sample.yaml
var Sample []byte
