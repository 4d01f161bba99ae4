# op: wins-orphans-stop
# Stops the rancher-wins-* processes wins started on the host. They keep
# their binaries locked, so they must go before wins' files are replaced.
# Each process is looked up before it is stopped, so that the wait below
# is on that process and not on a later one that reused its PID.
$handles = New-Object System.Collections.ArrayList
$stopped = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | ForEach-Object {
    $process = [ordered]@{ pid = [int]$_.ProcessId; name = [string]$_.Name; path = [string]$_.ExecutablePath; commandLine = [string]$_.CommandLine }
    $handle = Get-Process -Id $_.ProcessId -ErrorAction SilentlyContinue
    if ($null -ne $handle) {
        try { $null = $handle.Handle } catch { $null = $_ }
        [void]$handles.Add($handle)
    }
    Stop-Process -Id $_.ProcessId -Force -ErrorAction SilentlyContinue
    $process
})
foreach ($handle in $handles) {
    if (-not $handle.WaitForExit(10000)) {
        Stop-SwdtOp -Kind 'timeout' -Message ('process ' + $handle.Id + ' (' + $handle.ProcessName + ') did not exit after being stopped')
    }
}
Write-SwdtResult -Data ([ordered]@{ stopped = $stopped })
