package config

import _ "embed"

// Sample is a commented node file using every field, printed by
// `swdt config init`. samples/node.yaml is a copy (a test keeps them equal).
//
//go:embed sample.yaml
var Sample []byte
