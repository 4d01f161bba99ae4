package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// Registry keys (below HKLM) the node facts come from.
const (
	factsCurrentVersionKey = `SOFTWARE\Microsoft\Windows NT\CurrentVersion`
	// factsPowerShellKey holds Windows PowerShell 5.1's version: the
	// PowerShell that runs the fixed scripts (Chocolatey's install).
	factsPowerShellKey = `SOFTWARE\Microsoft\PowerShell\3\PowerShellEngine`
)

// nodeFacts reports the OS, its build, the processor architecture, the
// host name and the account the agent runs as.
func nodeFacts(_ context.Context, w winos.OS, _ ops.NodeFactsRequest) (ops.NodeFactsResponse, error) {
	var f ops.NodeFactsResponse
	var err error
	if f.Hostname, err = w.Hostname(); err != nil {
		return f, fmt.Errorf("read the host name: %w", err)
	}
	user, err := w.CurrentUser()
	if err != nil {
		return f, fmt.Errorf("read the current user: %w", err)
	}
	f.Username, f.IsAdmin = user.Name, user.Admin
	if f.Arch, err = w.Arch(); err != nil {
		return f, fmt.Errorf("read the processor architecture: %w", err)
	}
	// DisplayVersion is missing before 20H2 and a value may be missing on
	// a trimmed image: missing values stay empty.
	for _, v := range []struct {
		key, name string
		to        *string
	}{
		{factsCurrentVersionKey, "ProductName", &f.ProductName},
		{factsCurrentVersionKey, "DisplayVersion", &f.DisplayVersion},
		{factsCurrentVersionKey, "CurrentBuild", &f.CurrentBuild},
		{factsPowerShellKey, "PowerShellVersion", &f.PSVersion},
	} {
		rv, ok, err := setupRegistry(w, v.key, v.name)
		if err != nil {
			return f, err
		}
		if ok {
			*v.to = rv.String
		}
	}
	ubr, ok, err := setupRegistry(w, factsCurrentVersionKey, "UBR")
	if err != nil {
		return f, err
	}
	if ok {
		f.UBR = int(ubr.Number)
	}
	return f, nil
}

// setupFacts gathers everything `swdt setup` plans from in one op:
// PowerShell's language mode, the node, Remote Desktop, Chocolatey and
// administrators_authorized_keys.
func setupFacts(ctx context.Context, w winos.OS, req ops.SetupFactsRequest) (ops.SetupFactsResponse, error) {
	var resp ops.SetupFactsResponse
	if err := rdpCheckRuleNames(req.FirewallRules); err != nil {
		return resp, err
	}
	// The language mode first: every script after it runs under it. The
	// firewall scripts run in ConstrainedLanguage too; the steps that need
	// FullLanguage (Chocolatey's install) are refused by their own ops
	// with kind constrained-language, and setup plans with the mode.
	var err error
	if resp.LanguageMode, err = languageMode(ctx, w); err != nil {
		return resp, err
	}
	if resp.Node, err = nodeFacts(ctx, w, ops.NodeFactsRequest{}); err != nil {
		return resp, err
	}
	if resp.RDP, err = rdpState(ctx, w, req.FirewallRules); err != nil {
		return resp, err
	}
	if resp.Choco, err = chocoState(ctx, w); err != nil {
		return resp, err
	}
	// Only administrators may read the file once its ACL is right; for
	// anyone else the facts must still arrive, so that setup can say who
	// must run it.
	resp.AuthorizedKeys = ops.AuthorizedKeysState{Keys: []string{}}
	if resp.Node.IsAdmin {
		if resp.AuthorizedKeys, err = keysState(w); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// setupRegistry reads a value below HKLM; ok is false when the key or the
// value does not exist.
func setupRegistry(w winos.OS, key, name string) (v winos.RegistryValue, ok bool, err error) {
	v, err = w.RegistryValue(key, name)
	if errors.Is(err, fs.ErrNotExist) {
		return winos.RegistryValue{}, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf(`read HKLM\%s\%s: %w`, key, name, err)
	}
	return v, true, nil
}
