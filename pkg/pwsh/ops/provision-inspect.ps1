# op: provision-inspect
# Reads, for each target, the destination file (size, time, SHA-256, version) and
# the state of the target service and of every service that depends on it,
# transitively, so that the plan can order stops and starts.
Add-Type -AssemblyName System.ServiceProcess

function Get-SwdtFileFacts {
    # Size, last-write time, version and SHA-256 of Path. The digest of
    # Known is reused when size and time still match it.
    param([string] $Path, $Known)
    $facts = [ordered]@{ path = $Path; exists = $false; size = 0; sha256 = ''; version = ''; modTicks = 0; cached = $false }
    if (Test-Path -LiteralPath $Path -PathType Leaf) {
        $item = Get-Item -LiteralPath $Path
        $facts.exists = $true
        $facts.size = [int64]$item.Length
        $facts.modTicks = [int64]$item.LastWriteTimeUtc.Ticks
        if ($null -ne $Known -and $Known.sha256 -and [int64]$Known.size -eq $facts.size -and [int64]$Known.modTicks -eq $facts.modTicks) {
            $facts.sha256 = [string]$Known.sha256
            $facts.cached = $true
        } else {
            $facts.sha256 = (Get-FileHash -LiteralPath $Path -Algorithm SHA256).Hash.ToLowerInvariant()
        }
        if ($item.VersionInfo -and $item.VersionInfo.FileVersion) {
            $facts.version = [string]$item.VersionInfo.FileVersion
        }
    }
    $facts
}

$controllers = @{}
foreach ($sc in [System.ServiceProcess.ServiceController]::GetServices()) {
    $controllers[$sc.ServiceName] = $sc
}
$cim = @{}
foreach ($svc in (Get-CimInstance -ClassName Win32_Service)) {
    $cim[$svc.Name] = $svc
}
$startTypes = @{ Auto = 'Automatic'; Manual = 'Manual'; Disabled = 'Disabled'; Boot = 'Boot'; System = 'System' }

$files = New-Object System.Collections.ArrayList
$services = New-Object System.Collections.ArrayList
$seen = @{}
$queue = New-Object System.Collections.Queue
foreach ($target in @($SwdtParams.targets | Where-Object { $null -ne $_ })) {
    [void]$files.Add((Get-SwdtFileFacts -Path $target.destination -Known $target.known))
    $queue.Enqueue([string]$target.service)
}
while ($queue.Count -gt 0) {
    $name = $queue.Dequeue()
    if ($seen.ContainsKey($name)) { continue }
    $seen[$name] = $true
    $sc = $controllers[$name]
    if ($null -eq $sc) {
        [void]$services.Add([ordered]@{ name = $name; exists = $false; dependsOn = @(); dependents = @() })
        continue
    }
    $info = $cim[$name]
    $dependents = @($sc.DependentServices | ForEach-Object { $_.ServiceName })
    foreach ($d in $dependents) { $queue.Enqueue($d) }
    $startType = ''
    $processId = 0
    $binaryPath = ''
    if ($null -ne $info) {
        $startType = $startTypes[[string]$info.StartMode]
        $processId = [int]$info.ProcessId
        $binaryPath = [string]$info.PathName
    }
    [void]$services.Add([ordered]@{
        name       = $sc.ServiceName
        exists     = $true
        status     = $sc.Status.ToString()
        startType  = $startType
        pid        = $processId
        binaryPath = $binaryPath
        dependsOn  = @($sc.ServicesDependedOn | ForEach-Object { $_.ServiceName })
        dependents = $dependents
    })
}

Write-SwdtResult -Data ([ordered]@{ files = $files.ToArray(); services = $services.ToArray() })
