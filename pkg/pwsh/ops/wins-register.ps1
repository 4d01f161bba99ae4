# op: wins-register
# Registers the rancher-wins service with wins.exe srv app run --register
# (wins re-registers when it is present), or removes it with --unregister.
# wins registers the service with the flags it was given minus --register,
# so --config makes the service read the config file swdt wrote.
Add-Type -AssemblyName System.ServiceProcess
$binary = [string]$SwdtParams.binary
if (-not (Test-Path -LiteralPath $binary -PathType Leaf)) {
    Stop-SwdtOp -Kind 'not-found' -Message ($binary + ' does not exist')
}
$arguments = @('srv', 'app', 'run', '--register')
if ($SwdtParams.unregister) {
    $arguments = @('srv', 'app', 'run', '--unregister')
} elseif ($SwdtParams.configPath) {
    $arguments += @('--config', [string]$SwdtParams.configPath)
}
# wins logs to stderr (logrus), and 5.1 turns a native command's redirected
# stderr into a terminating error under 'Stop': wins runs in a child scope
# with the preference relaxed, its lines taken as plain text.
$output = (& { $ErrorActionPreference = 'Continue'; & $binary @arguments 2>&1 } | ForEach-Object { [string]$_ }) -join "`r`n"
$code = $LASTEXITCODE
# A service deleted while it runs stays listed until it stops; the SCM
# marks it with DeleteFlag=1 in its key. It is not registered any more.
$registered = $null -ne ([System.ServiceProcess.ServiceController]::GetServices() | Where-Object { $_.ServiceName -eq 'rancher-wins' })
if ($registered) {
    $key = Get-ItemProperty -LiteralPath 'HKLM:\SYSTEM\CurrentControlSet\Services\rancher-wins' -ErrorAction SilentlyContinue
    if ($null -ne $key -and [int]$key.DeleteFlag -eq 1) { $registered = $false }
}
if ($code -ne 0) {
    Stop-SwdtOp -Kind 'register-failed' -Message ('wins.exe ' + ($arguments -join ' ') + ' exited ' + $code + ': ' + $output.Trim())
}
Write-SwdtResult -Data ([ordered]@{ registered = $registered; output = $output.Trim() })
