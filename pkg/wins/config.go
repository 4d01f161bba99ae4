package wins

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/target"
)

// SmokeName is the file name of the harmless executable `--deep` runs
// through the bridge. It is placed in swdt's own folder (ops.AgentDir,
// where only Administrators and SYSTEM may write, and only for the
// duration of --deep), and its path is always whitelisted in the config
// swdt writes, so that --deep works without the user whitelisting
// anything, and no pod can have wins run a program another account put
// there.
const SmokeName = "swdt-smoke.exe"

// Paths are where wins' files live on the node.
type Paths struct {
	// Binary is wins.exe (spec.wins.destination).
	Binary string
	// Config is wins' config file, beside the binary.
	Config string
	// Smoke is where --deep places its copy of hostname.exe.
	Smoke string
}

// PathsFor returns the paths of spec; a nil spec means the defaults
// (C:\etc\rancher\wins), which is what verify and uninstall use for a
// node without spec.wins.
func PathsFor(spec *v1alpha1.WinsSpec) Paths {
	binary := target.WinsDestination(spec)
	return Paths{Binary: binary, Config: winpath.Join(winpath.Dir(binary), "config"), Smoke: winpath.Join(ops.AgentDir, SmokeName)}
}

// fileConfig is wins' config file. wins reads it as YAML through these
// JSON tags (DESIGN.md §5).
type fileConfig struct {
	Debug     bool      `json:"debug"`
	Listen    string    `json:"listen"`
	Proxy     string    `json:"proxy"`
	WhiteList whiteList `json:"white_list"`
}

type whiteList struct {
	ProcessPaths []string `json:"processPaths"`
	ProxyPorts   []int32  `json:"proxyPorts"`
}

// RenderConfig returns the config file swdt writes for spec: wins' default
// pipe names and the whitelist of spec plus the smoke path of p. The output
// depends only on its inputs, so an unchanged spec leaves the file as it
// is.
func RenderConfig(spec *v1alpha1.WinsSpec, p Paths) (string, error) {
	cfg := fileConfig{Listen: ops.WinsPipe, Proxy: ops.WinsProxyPipe,
		WhiteList: whiteList{ProcessPaths: []string{}, ProxyPorts: []int32{}}}
	seen := map[string]bool{}
	for _, pp := range append(append([]string(nil), spec.WhiteList.ProcessPaths...), p.Smoke) {
		if key := strings.ToLower(pp); !seen[key] {
			seen[key] = true
			cfg.WhiteList.ProcessPaths = append(cfg.WhiteList.ProcessPaths, pp)
		}
	}
	cfg.WhiteList.ProxyPorts = append(cfg.WhiteList.ProxyPorts, spec.WhiteList.ProxyPorts...)
	raw, err := yaml.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("render wins config: %w", err)
	}
	return "# Written by swdt wins; changes here are replaced on the next run.\n" + string(raw), nil
}
