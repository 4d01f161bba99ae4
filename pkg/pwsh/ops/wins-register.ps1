# op: wins-register
# Registers the rancher-wins service with wins.exe srv app run --register
# (wins re-registers when it is present), or removes it with --unregister.
Add-Type -AssemblyName System.ServiceProcess
$binary = [string]$SwdtParams.binary
if (-not (Test-Path -LiteralPath $binary -PathType Leaf)) {
    Stop-SwdtOp -Kind 'not-found' -Message ($binary + ' does not exist')
}
$flag = '--register'
if ($SwdtParams.unregister) { $flag = '--unregister' }
$output = & $binary srv app run $flag 2>&1 | Out-String
$code = $LASTEXITCODE
$registered = $null -ne ([System.ServiceProcess.ServiceController]::GetServices() | Where-Object { $_.ServiceName -eq 'rancher-wins' })
if ($code -ne 0) {
    Stop-SwdtOp -Kind 'register-failed' -Message ('wins.exe srv app run ' + $flag + ' exited ' + $code + ': ' + $output.Trim())
}
Write-SwdtResult -Data ([ordered]@{ registered = $registered; output = $output.Trim() })
