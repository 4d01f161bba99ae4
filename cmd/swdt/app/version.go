package app

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/agentbin"
	"sigs.k8s.io/swdt/pkg/ui/report"
)

// Set by the Makefile with -ldflags "-X ...".
var (
	version = "dev"
	commit  = "unknown"
)

func newVersionCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print swdt's version, commit, Go version and platform",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			return report.PrintVersion(e.ui, currentVersion())
		},
	}
}

func currentVersion() report.Version {
	v := report.NewVersion()
	v.Version, v.Commit, v.GoVersion, v.Platform = version, commit, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH
	// `go install sigs.k8s.io/swdt/cmd/swdt@v1.2.3` sets no ldflags but
	// records the module version.
	info, ok := debug.ReadBuildInfo()
	if ok && v.Version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v.Version = info.Main.Version
	}
	// A plain `go build` in a clone records the commit it built.
	for i := 0; ok && v.Commit == "unknown" && i < len(info.Settings); i++ {
		if st := info.Settings[i]; st.Key == "vcs.revision" && len(st.Value) >= 12 {
			v.Commit = st.Value[:12]
		}
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		if d, err := agentbin.Digest(goarch); err == nil {
			v.Agents = append(v.Agents, report.Agent{Platform: "windows/" + goarch, SHA256: d})
		}
	}
	return v
}
