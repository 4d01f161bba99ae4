# script: windows-feature
# language: constrained
# Reads a Windows feature's install state and, with "install", installs
# it without restarting. Windows Server has the ServerManager module
# (Get-WindowsFeature, Install-WindowsFeature); client editions have
# DISM's Get-WindowsOptionalFeature and Enable-WindowsOptionalFeature,
# whose states are mapped to Get-WindowsFeature's. Runs after
# request-prelude.ps1 (request in $request): {"name", "install": bool}.
# Output: {"name", "state": "Installed"|"InstallPending"|"Available",
# "restartNeeded": bool}; a failure is the prelude's failure line.
$name = [string]$request.name
$restart = $false
if ($null -ne (Get-Command -Name Get-WindowsFeature -ErrorAction SilentlyContinue)) {
    $feature = Get-WindowsFeature -Name $name
    if ($null -eq $feature) { throw "Windows has no feature named '$name'" }
    if ($request.install -eq $true -and -not $feature.Installed) {
        $result = Install-WindowsFeature -Name $name
        if (-not $result.Success) { throw "Install-WindowsFeature $name did not succeed (exit code $([string]$result.ExitCode))" }
        $restart = ([string]$result.RestartNeeded -eq 'Yes')
        $feature = Get-WindowsFeature -Name $name
    }
    $state = [string]$feature.InstallState
} else {
    $feature = Get-WindowsOptionalFeature -Online -FeatureName $name
    if ($null -eq $feature) { throw "Windows has no optional feature named '$name'" }
    if ($request.install -eq $true -and [string]$feature.State -ne 'Enabled') {
        $result = Enable-WindowsOptionalFeature -Online -FeatureName $name -All -NoRestart
        $restart = [bool]$result.RestartNeeded
        $feature = Get-WindowsOptionalFeature -Online -FeatureName $name
    }
    switch ([string]$feature.State) {
        'Enabled' { $state = 'Installed' }
        'EnablePending' { $state = 'InstallPending' }
        default { $state = 'Available' }
    }
}
if ($restart) { $state = 'InstallPending' }
Write-SwdtJson -Object ([ordered]@{ name = $name; state = $state; restartNeeded = $restart })
