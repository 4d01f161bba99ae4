package report

import "sigs.k8s.io/swdt/pkg/ui"

// Version is the -o json document of swdt version.
type Version struct {
	Meta
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// Agents are the embedded swdt-agent builds (built from the same
	// tree as swdt), none for a swdt built without `make`.
	Agents []Agent `json:"agents"`
}

// Agent is one embedded agent.
type Agent struct {
	Platform string `json:"platform"`
	SHA256   string `json:"sha256"`
}

// NewVersion is a Version document with its kind.
func NewVersion() Version { return Version{Meta: meta(KindVersion), Agents: []Agent{}} }

// PrintVersion shows v.
func PrintVersion(u *ui.UI, v Version) error {
	if u.Format() == ui.FormatJSON {
		return printJSON(u, v)
	}
	u.Printf("swdt %s\ncommit: %s\ngo: %s\nplatform: %s\n", v.Version, v.Commit, v.GoVersion, v.Platform)
	if len(v.Agents) == 0 {
		u.Printf("agent: none embedded: build swdt with `make build` to deploy to nodes\n")
	}
	for _, a := range v.Agents {
		u.Printf("agent: %s sha256:%s\n", a.Platform, a.SHA256)
	}
	return nil
}
