# op: wins-uninstall
# Removes wins: stops the service and its host processes, unregisters the
# service, deletes the binary (and swdt's leftovers beside it), and removes
# the config after keeping a copy as <config>.swdt-bak.
Add-Type -AssemblyName System.ServiceProcess
$binary = [string]$SwdtParams.binary
$config = [string]$SwdtParams.configPath
$name = 'rancher-wins'
$removed = New-Object System.Collections.ArrayList

$sc = [System.ServiceProcess.ServiceController]::GetServices() | Where-Object { $_.ServiceName -eq $name }
if ($null -ne $sc -and $sc.Status -ne 'Stopped') {
    if ($sc.Status -ne 'StopPending') { $sc.Stop() }
    try {
        $sc.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(30))
    } catch {
        $cim = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $name }
        if ($cim.ProcessId -gt 0) { Stop-Process -Id $cim.ProcessId -Force -ErrorAction SilentlyContinue }
        $sc.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(30))
    }
}
$stopped = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | ForEach-Object {
    $p = [ordered]@{ pid = [int]$_.ProcessId; name = [string]$_.Name; path = [string]$_.ExecutablePath; commandLine = [string]$_.CommandLine }
    Stop-Process -Id $_.ProcessId -Force -ErrorAction SilentlyContinue
    $p
})
foreach ($p in $stopped) {
    $handle = Get-Process -Id $p.pid -ErrorAction SilentlyContinue
    if ($null -ne $handle) { [void]$handle.WaitForExit(10000) }
}

if ($null -ne $sc) {
    if (Test-Path -LiteralPath $binary -PathType Leaf) {
        [void](& $binary srv app run --unregister 2>&1)
    }
    $still = [System.ServiceProcess.ServiceController]::GetServices() | Where-Object { $_.ServiceName -eq $name }
    if ($null -ne $still) {
        $scExe = Join-Path $env:SystemRoot 'System32\sc.exe'
        $out = & $scExe delete $name 2>&1 | Out-String
        if ($LASTEXITCODE -ne 0) {
            Stop-SwdtOp -Kind 'unregister-failed' -Message ('could not delete service ' + $name + ': ' + $out.Trim())
        }
    }
}

$backup = ''
if (Test-Path -LiteralPath $config -PathType Leaf) {
    $backup = $config + '.swdt-bak'
    Copy-Item -LiteralPath $config -Destination $backup -Force
    Remove-Item -LiteralPath $config -Force
    [void]$removed.Add($config)
}
foreach ($f in @($binary, ($binary + '.swdt-bak'), ($binary + '.swdt-new'), ($binary + '.swdt-failed'))) {
    if (Test-Path -LiteralPath $f -PathType Leaf) {
        Remove-Item -LiteralPath $f -Force
        [void]$removed.Add($f)
    }
}
Write-SwdtResult -Data ([ordered]@{ serviceRemoved = ($null -ne $sc); removed = $removed.ToArray(); configBackup = $backup; stopped = $stopped })
