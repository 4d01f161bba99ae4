//go:build windows

// Command fakechoco plays choco.exe for the Wine tests, with the commands
// swdt's agent runs: --version, list --limit-output [--exact NAME], and
// install NAME (any name but nosuchpackage installs as version 1.0.0,
// recorded in packages.txt beside the program).
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	db := filepath.Join(filepath.Dir(exe), "packages.txt")
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "Chocolatey v2.2.2: give a command")
		return 1
	}
	switch args[0] {
	case "--version":
		fmt.Println("2.2.2")
	case "list":
		raw, _ := os.ReadFile(db)
		exact := ""
		for i, a := range args {
			if a == "--exact" && i+1 < len(args) {
				exact = args[i+1]
			}
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if name, _, ok := strings.Cut(line, "|"); ok && (exact == "" || strings.EqualFold(name, exact)) {
				fmt.Println(line)
			}
		}
	case "install":
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "install: give a package")
			return 1
		}
		if args[1] == "nosuchpackage" {
			fmt.Println("nosuchpackage not installed. The package was not found with the source(s) listed.")
			return 1
		}
		f, err := os.OpenFile(db, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer f.Close()
		if _, err := fmt.Fprintf(f, "%s|1.0.0\n", args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Printf("The install of %s was successful.\n", args[1])
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", args[0])
		return 1
	}
	return 0
}
