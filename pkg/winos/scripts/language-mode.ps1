# script: language-mode
# Prints the session's language mode. Under Constrained Language mode
# (WDAC, AppLocker) Chocolatey's install script cannot run, and the agent
# says so instead of reporting a generic install failure. Nothing here may
# use a type outside Constrained Language mode's allowed list.
Write-Output ([string]$ExecutionContext.SessionState.LanguageMode)
