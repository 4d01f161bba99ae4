# op: wins-verify
# Checks the wins bridge as a container would use it: the service, both
# pipes, a get-version round trip through the pipe next to the same values
# read straight from the host registry, and optionally a whitelisted process
# run on the host through the pipe (then cleaned up).
Add-Type -AssemblyName System.ServiceProcess
$binary = [string]$SwdtParams.binary
$name = 'rancher-wins'
$service = [ordered]@{ name = $name; exists = $false; dependsOn = @(); dependents = @() }
$sc = [System.ServiceProcess.ServiceController]::GetServices() | Where-Object { $_.ServiceName -eq $name }
if ($null -ne $sc) {
    $cim = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $name }
    $startTypes = @{ Auto = 'Automatic'; Manual = 'Manual'; Disabled = 'Disabled' }
    $service.exists = $true
    $service.status = $sc.Status.ToString()
    $service.startType = $startTypes[[string]$cim.StartMode]
    $service.pid = [int]$cim.ProcessId
    $service.binaryPath = [string]$cim.PathName
}

$pipeNames = @([System.IO.Directory]::GetFiles('\\.\pipe\') | ForEach-Object { [System.IO.Path]::GetFileName($_) })
$pipes = [ordered]@{ rancher_wins = ($pipeNames -contains 'rancher_wins'); rancher_wins_proxy = ($pipeNames -contains 'rancher_wins_proxy') }

$keys = @('CurrentMajorVersionNumber', 'CurrentMinorVersionNumber', 'CurrentBuildNumber', 'UBR', 'ReleaseId', 'BuildLabEx', 'CurrentBuild')
$cv = Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$registry = [ordered]@{}
foreach ($k in $keys) { $registry[$k] = $cv.$k }

$getVersion = [ordered]@{}
$getVersionError = ''
if (-not (Test-Path -LiteralPath $binary -PathType Leaf)) {
    $getVersionError = $binary + ' does not exist'
} else {
    $output = & $binary cli hst get-version 2>&1 | Out-String
    if ($LASTEXITCODE -ne 0) {
        $getVersionError = 'wins.exe cli hst get-version exited ' + $LASTEXITCODE + ': ' + $output.Trim()
    } else {
        try {
            $parsed = $output | ConvertFrom-Json
            foreach ($k in $keys) { $getVersion[$k] = $parsed.$k }
        } catch {
            $getVersionError = 'wins.exe cli hst get-version printed no JSON: ' + $output.Trim()
        }
    }
}

$deep = $null
if ($SwdtParams.deep) {
    $smoke = [string]$SwdtParams.smokePath
    $deep = [ordered]@{ ok = $false; output = ''; expected = [Environment]::MachineName; error = ''; leftovers = @() }
    try {
        Copy-Item -LiteralPath (Join-Path $env:SystemRoot 'System32\HOSTNAME.EXE') -Destination $smoke -Force
        $output = & $binary cli prc run --path $smoke 2>&1 | Out-String
        $deep.output = $output.Trim()
        if ($LASTEXITCODE -ne 0) {
            $deep.error = 'wins.exe cli prc run exited ' + $LASTEXITCODE
        } elseif (-not $output.Contains($deep.expected)) {
            $deep.error = 'the process ran but did not print the hostname'
        } else {
            $deep.ok = $true
        }
    } catch {
        $deep.error = $_.Exception.Message
    }
    # Clean up: the host process wins started, its renamed copy, the smoke copy.
    Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | ForEach-Object {
        Stop-Process -Id $_.ProcessId -Force -ErrorAction SilentlyContinue
    }
    $smokeDir = Split-Path -Path $smoke -Parent
    $renamed = Join-Path $smokeDir ('rancher-wins-' + (Split-Path -Path $smoke -Leaf))
    foreach ($f in @($renamed, $smoke)) {
        if (Test-Path -LiteralPath $f) {
            try { Remove-Item -LiteralPath $f -Force } catch { $deep.leftovers += $f }
        }
    }
    $running = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'")
    foreach ($p in $running) { $deep.leftovers += ('process ' + $p.ProcessId + ' ' + $p.Name) }
}

Write-SwdtResult -Data ([ordered]@{ service = $service; pipes = $pipes; getVersion = $getVersion; getVersionError = $getVersionError; registry = $registry; deep = $deep })
