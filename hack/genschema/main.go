// Command genschema writes the JSON Schema of node files generated from
// the Node API's Go types (see pkg/config/schema). `make schema` runs it.
package main

import (
	"flag"
	"fmt"
	"os"

	"sigs.k8s.io/swdt/pkg/config/schema"
)

func main() {
	api := flag.String("api", "apis/config/v1alpha1", "directory of the Node API's source, for the descriptions")
	out := flag.String("o", "schemas/node.schema.json", "file to write")
	flag.Parse()
	if err := run(*api, *out); err != nil {
		fmt.Fprintln(os.Stderr, "genschema:", err)
		os.Exit(1)
	}
}

func run(api, out string) error {
	data, err := schema.Generate(api)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("write the schema: %w", err)
	}
	return nil
}
