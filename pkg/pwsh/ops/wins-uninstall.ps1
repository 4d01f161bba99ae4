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
    # The service's process, held open from before the stop: Stopped is
    # reported before the process exits, and the binary stays locked (and
    # cannot be deleted below) until it has.
    $process = $null
    $cim = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $name }
    if ($null -ne $cim -and $cim.ProcessId -gt 0) {
        $process = Get-Process -Id $cim.ProcessId -ErrorAction SilentlyContinue
        if ($null -ne $process) { try { $null = $process.Handle } catch { $null = $_ } }
    }
    # A starting service cannot take a stop control (error 1061).
    $deadline = [DateTime]::UtcNow.AddSeconds(30)
    while ($sc.Status -eq 'StartPending' -and [DateTime]::UtcNow -lt $deadline) {
        Start-Sleep -Milliseconds 100
        $sc.Refresh()
    }
    if ($sc.Status -ne 'Stopped' -and $sc.Status -ne 'StopPending') {
        try { $sc.Stop() } catch { $null = $_ }
    }
    try {
        $sc.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(30))
    } catch [System.ServiceProcess.TimeoutException] {
        if ($null -ne $process) { try { $process.Kill() } catch { $null = $_ } }
        $sc.WaitForStatus('Stopped', [TimeSpan]::FromSeconds(30))
    }
    if ($null -ne $process -and -not $process.WaitForExit(30000)) {
        Stop-SwdtOp -Kind 'timeout' -Message ('the process ' + $cim.ProcessId + ' of service ' + $name + ' did not exit after the service stopped')
    }
}
# Each process is looked up before it is stopped, so that the wait below
# is on that process and not on a later one that reused its PID.
$handles = New-Object System.Collections.ArrayList
$stopped = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | ForEach-Object {
    $p = [ordered]@{ pid = [int]$_.ProcessId; name = [string]$_.Name; path = [string]$_.ExecutablePath; commandLine = [string]$_.CommandLine }
    $handle = Get-Process -Id $_.ProcessId -ErrorAction SilentlyContinue
    if ($null -ne $handle) {
        try { $null = $handle.Handle } catch { $null = $_ }
        [void]$handles.Add($handle)
    }
    Stop-Process -Id $_.ProcessId -Force -ErrorAction SilentlyContinue
    $p
})
foreach ($handle in $handles) { [void]$handle.WaitForExit(10000) }

if ($null -ne $sc) {
    # wins and sc.exe run in child scopes with the preference relaxed: 5.1
    # turns a native command's redirected stderr (wins logs there) into a
    # terminating error under 'Stop'.
    if (Test-Path -LiteralPath $binary -PathType Leaf) {
        [void](& { $ErrorActionPreference = 'Continue'; & $binary srv app run --unregister 2>&1 })
    }
    $still = [System.ServiceProcess.ServiceController]::GetServices() | Where-Object { $_.ServiceName -eq $name }
    if ($null -ne $still) {
        $scExe = Join-Path $env:SystemRoot 'System32\sc.exe'
        $out = (& { $ErrorActionPreference = 'Continue'; & $scExe delete $name 2>&1 } | ForEach-Object { [string]$_ }) -join "`r`n"
        # 1072: already marked for deletion; it goes once the last handle closes.
        if ($LASTEXITCODE -ne 0 -and $LASTEXITCODE -ne 1072) {
            Stop-SwdtOp -Kind 'unregister-failed' -Message ('could not delete service ' + $name + ': ' + $out.Trim())
        }
    }
}

$backup = ''
if (Test-Path -LiteralPath $config -PathType Leaf) {
    $backup = $config + '.swdt-bak'
    [System.IO.File]::Copy([string]$config, [string]$backup, $true)
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
