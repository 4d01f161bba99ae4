package app

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/ui"
)

// Set by the Makefile with -ldflags "-X ...".
var (
	version = "dev"
	commit  = "unknown"
)

// versionInfo is what `swdt version` reports.
type versionInfo struct {
	docMeta
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

func newVersionCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print swdt's version, commit, Go version and platform",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			v := currentVersion()
			if e.ui.Format() == ui.FormatJSON {
				return e.ui.JSON(v)
			}
			e.ui.Printf("swdt %s\ncommit: %s\ngo: %s\nplatform: %s\n", v.Version, v.Commit, v.GoVersion, v.Platform)
			return nil
		},
	}
}

func currentVersion() versionInfo {
	v := versionInfo{docMeta: meta("Version"), Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	// `go install sigs.k8s.io/swdt/cmd/swdt@v1.2.3` sets no ldflags but
	// records the module version.
	if info, ok := debug.ReadBuildInfo(); ok && v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	return v
}
