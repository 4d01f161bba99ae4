# op: swap-recover
# Repairs a swap that was interrupted (connection lost, swdt killed): where
# a destination is missing but its backup exists, the backup is put back;
# staged files are removed; the listed services are started.
Add-Type -AssemblyName System.ServiceProcess
$restored = New-Object System.Collections.ArrayList
$started = New-Object System.Collections.ArrayList
$notStarted = New-Object System.Collections.ArrayList

foreach ($item in @($SwdtParams.items | Where-Object { $null -ne $_ })) {
    if (-not (Test-Path -LiteralPath $item.destination -PathType Leaf) -and (Test-Path -LiteralPath $item.backup -PathType Leaf)) {
        [System.IO.File]::Move([string]$item.backup, [string]$item.destination)
        [void]$restored.Add([string]$item.destination)
    }
    if (Test-Path -LiteralPath $item.staged -PathType Leaf) {
        Remove-Item -LiteralPath $item.staged -Force
    }
}

foreach ($name in @($SwdtParams.start | Where-Object { $null -ne $_ })) {
    # Status throws for a service that does not exist: inside the try, so
    # that it is reported like any other service that did not start.
    try {
        $sc = New-Object System.ServiceProcess.ServiceController $name
        if ($sc.Status -eq 'Running') { continue }
        if ($sc.Status -ne 'StartPending') { $sc.Start() }
        $sc.WaitForStatus('Running', [TimeSpan]::FromSeconds(60))
        [void]$started.Add([string]$name)
    } catch {
        [void]$notStarted.Add([ordered]@{ service = [string]$name; error = $_.Exception.Message })
    }
}

Write-SwdtResult -Data ([ordered]@{ restored = $restored.ToArray(); started = $started.ToArray(); notStarted = $notStarted.ToArray() })
