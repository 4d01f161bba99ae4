# op: wins-orphans-stop
# Stops the rancher-wins-* processes wins started on the host. They keep
# their binaries locked, so they must go before wins' files are replaced.
$stopped = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | ForEach-Object {
    $process = [ordered]@{ pid = [int]$_.ProcessId; name = [string]$_.Name; path = [string]$_.ExecutablePath; commandLine = [string]$_.CommandLine }
    Stop-Process -Id $_.ProcessId -Force -ErrorAction SilentlyContinue
    $process
})
foreach ($p in $stopped) {
    $handle = Get-Process -Id $p.pid -ErrorAction SilentlyContinue
    if ($null -ne $handle -and -not $handle.WaitForExit(10000)) {
        Stop-SwdtOp -Kind 'timeout' -Message ('process ' + $p.pid + ' (' + $p.name + ') did not exit after being stopped')
    }
}
Write-SwdtResult -Data ([ordered]@{ stopped = $stopped })
