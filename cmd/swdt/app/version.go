package app

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"sigs.k8s.io/swdt/pkg/agentbin"
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
	// Agents are the embedded swdt-agent builds (built from the same
	// tree as swdt), none for a swdt built without `make`.
	Agents []agentInfo `json:"agents"`
}

// agentInfo is one embedded agent.
type agentInfo struct {
	Platform string `json:"platform"`
	SHA256   string `json:"sha256"`
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
			if len(v.Agents) == 0 {
				e.ui.Printf("agent: none embedded: build swdt with `make build` to deploy to nodes\n")
			}
			for _, a := range v.Agents {
				e.ui.Printf("agent: %s sha256:%s\n", a.Platform, a.SHA256)
			}
			return nil
		},
	}
}

func currentVersion() versionInfo {
	v := versionInfo{docMeta: meta("Version"), Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
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
	v.Agents = []agentInfo{}
	for _, goarch := range []string{"amd64", "arm64"} {
		if d, err := agentbin.Digest(goarch); err == nil {
			v.Agents = append(v.Agents, agentInfo{Platform: "windows/" + goarch, SHA256: d})
		}
	}
	return v
}
