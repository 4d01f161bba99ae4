package simos

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"sigs.k8s.io/swdt/pkg/simnode/programs"
	"sigs.k8s.io/swdt/pkg/winos"
)

// scriptPlay plays one fixed PowerShell script with its input.
type scriptPlay func(ctx context.Context, n *Node, input []byte) (winos.Result, error)

// scripts play the fixed PowerShell scripts that read Windows itself
// (language mode, firewall, event log) by name; the programs' scripts
// (Chocolatey's install, the Hyper-V host's) are theirs (programs.Script).
var scripts = map[string]scriptPlay{
	winos.ScriptLanguageMode.Name(): func(_ context.Context, n *Node, _ []byte) (winos.Result, error) {
		return winos.Result{Stdout: []byte(n.LanguageMode() + "\r\n")}, nil
	},
	winos.ScriptFirewallRules.Name(): func(ctx context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct{ Names []string }
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		type rule struct {
			Name    string `json:"name"`
			Exists  bool   `json:"exists"`
			Enabled bool   `json:"enabled"`
		}
		out := []rule{}
		for _, name := range req.Names {
			r, ok := n.FirewallRule(name)
			out = append(out, rule{Name: name, Exists: ok, Enabled: ok && r.Enabled})
		}
		raw, _ := json.Marshal(out)
		return winos.Result{Stdout: append(raw, '\r', '\n')}, nil
	},
	winos.ScriptFirewallSet.Name(): func(ctx context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct {
			Names   []string
			Enabled bool
		}
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		if err := n.OS().SetFirewallRules(ctx, req.Names, req.Enabled); err != nil {
			return winos.Result{ExitCode: 1, Stderr: []byte(err.Error() + "\r\n")}, nil
		}
		return winos.Result{}, nil
	},
	winos.ScriptFirewallRuleCreate.Name(): func(_ context.Context, n *Node, input []byte) (winos.Result, error) {
		var req winos.FirewallRuleSpec
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		if err := n.createRule(req); err != nil {
			return scriptFailed(err)
		}
		return scriptJSON(map[string]any{"created": true})
	},
	winos.ScriptFirewallRuleRemove.Name(): func(_ context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct{ Names []string }
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		removed, err := n.removeRules(req.Names)
		if err != nil {
			return scriptFailed(err)
		}
		return scriptJSON(map[string]any{"removed": removed})
	},
	winos.ScriptWindowsFeature.Name(): func(ctx context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct {
			Name    string
			Install bool
		}
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		restart := false
		if req.Install {
			st, err := n.OS().InstallWindowsFeature(ctx, req.Name)
			if err != nil {
				return scriptFailed(err)
			}
			restart = st == winos.FeatureInstallPending
		}
		st, err := n.Feature(req.Name)
		if err != nil {
			return scriptFailed(err)
		}
		return scriptJSON(map[string]any{"name": req.Name, "state": st, "restartNeeded": restart})
	},
	winos.ScriptServiceEvents.Name(): func(ctx context.Context, n *Node, input []byte) (winos.Result, error) {
		var req struct {
			Names []string
			Since time.Time
			Max   int
		}
		if err := json.Unmarshal(input, &req); err != nil {
			return scriptError(err)
		}
		lines := []string{}
		for _, name := range req.Names {
			if _, err := n.Service(name); err == nil {
				got, _ := n.OS().ServiceEvents(ctx, name, req.Since, req.Max)
				lines = append(lines, got...)
				break
			}
		}
		raw, _ := json.Marshal(lines)
		return winos.Result{Stdout: append(raw, '\r', '\n')}, nil
	},
}

// scriptError is how powershell.exe ends a script whose input it could not
// read: exit 1, the error on stderr.
func scriptError(err error) (winos.Result, error) {
	return winos.Result{ExitCode: 1, Stderr: []byte("ConvertFrom-Json : " + err.Error() + "\r\n")}, nil
}

// scriptFailed is the failure line request-prelude.ps1's trap prints for
// a terminating error err, with exit code 1.
func scriptFailed(err error) (winos.Result, error) {
	res, _ := scriptJSON(map[string]any{"error": map[string]string{"kind": "exception", "message": featureError(err)}})
	res.ExitCode = 1
	return res, nil
}

// scriptJSON is a script's one line of JSON output.
func scriptJSON(v any) (winos.Result, error) {
	raw, _ := json.Marshal(v)
	return winos.Result{Stdout: append(raw, '\r', '\n')}, nil
}

// runScript is winos.OS.RunScript on the simulated node.
func (n *Node) runScript(ctx context.Context, s winos.Script, input []byte) (winos.Result, error) {
	if err := ctx.Err(); err != nil {
		return winos.Result{}, err
	}
	play := scripts[s.Name()]
	if play == nil {
		if p := programs.Script(s.Name()); p != nil {
			play = func(ctx context.Context, n *Node, input []byte) (winos.Result, error) { return p(ctx, n.Node, input) }
		}
	}
	if play == nil {
		return winos.Result{}, fmt.Errorf("simnode does not simulate script %s", s.Name())
	}
	if (simOS{n}).stubScript(s) != nil {
		return winos.Result{}, nil
	}
	if res, refused := n.constrainedScript(s); refused {
		return res, nil
	}
	return play(ctx, n, input)
}
