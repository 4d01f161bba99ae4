package agent

import (
	"context"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// PowerShell's language mode. Under a WDAC or AppLocker policy,
// powershell.exe runs scripts in ConstrainedLanguage, where only core
// types may be used. swdt's fixed scripts say which mode they need
// (pkg/winos: "# language:"); all but Chocolatey's install run in
// ConstrainedLanguage. setup-facts reports the mode first, and an op that
// needs FullLanguage refuses with kind constrained-language instead of
// meeting a raw script error.

// languageMode is the language mode powershell.exe reports. Empty
// output is not a mode: it is an error.
func languageMode(ctx context.Context, w winos.OS) (string, error) {
	res, expired, err := scriptBounded(ctx, w, setupLimits.query, winos.ScriptLanguageMode, nil)
	if err != nil {
		return "", fmt.Errorf("read PowerShell's language mode: %w", err)
	}
	if expired {
		return "", Fail(ops.KindTimeout, "powershell.exe did not report its language mode within %s", setupLimits.query)
	}
	if res.ExitCode != 0 {
		return "", Fail(ops.KindInstallFailed, "powershell.exe could not report its language mode (exit code %d), so swdt's "+
			"PowerShell scripts cannot run either: %s", res.ExitCode, lastBytes(printed(res), 800))
	}
	mode := chocoFirstLine(string(res.Stdout))
	if mode == "" {
		return "", Fail(ops.KindInstallFailed, "powershell.exe printed no language mode (exit code 0, nothing on stdout%s): "+
			"check that powershell.exe runs for this account (ssh to the node and run powershell -NoProfile -Command $ExecutionContext.SessionState.LanguageMode)",
			stderrNote(res))
	}
	return mode, nil
}

// stderrNote is what the program printed on stderr, as a note.
func stderrNote(res winos.Result) string {
	if len(res.Stderr) == 0 {
		return ""
	}
	return "; stderr: " + lastBytes(winos.ScriptStderr(res.Stderr), 400)
}

// requireFullLanguage fails with kind constrained-language unless
// PowerShell runs in FullLanguage mode; needs says what needs it.
func requireFullLanguage(ctx context.Context, w winos.OS, needs string) error {
	mode, err := languageMode(ctx, w)
	if err != nil {
		return err
	}
	if mode != "FullLanguage" {
		return Fail(ops.KindConstrainedLanguage, "PowerShell on this node runs in %s mode, which an application control policy "+
			"(Windows Defender Application Control, WDAC, or AppLocker) enforces; %s. Have the policy allow it, then run swdt setup again", mode, needs)
	}
	return nil
}
