# script: language-mode
# language: constrained
# Prints the session's language mode. Under Constrained Language mode
# (WDAC, AppLocker) Chocolatey's install script cannot run, and the agent
# says so instead of reporting a generic install failure.
Write-Output ([string]$ExecutionContext.SessionState.LanguageMode)
