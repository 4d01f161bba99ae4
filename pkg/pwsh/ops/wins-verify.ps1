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
    $service.dependsOn = @($sc.ServicesDependedOn | ForEach-Object { $_.ServiceName })
    $service.dependents = @($sc.DependentServices | ForEach-Object { $_.ServiceName })
}

# GetFiles throws when some pipe's name is not a valid path; Get-ChildItem
# then lists the others.
try {
    $pipeNames = @([System.IO.Directory]::GetFiles('\\.\pipe\') | ForEach-Object { [System.IO.Path]::GetFileName($_) })
} catch {
    $pipeNames = @(Get-ChildItem -LiteralPath '\\.\pipe\' -ErrorAction SilentlyContinue | ForEach-Object { $_.Name })
}
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
    # wins logs and reports errors on stderr, and 5.1 turns a native
    # command's redirected stderr into a terminating error under 'Stop':
    # wins runs in a child scope with the preference relaxed. Only stdout
    # is parsed, so that a log line cannot spoil the JSON.
    $lines = @(& { $ErrorActionPreference = 'Continue'; & $binary cli hst get-version 2>&1 })
    $code = $LASTEXITCODE
    $output = (@($lines | ForEach-Object { [string]$_ }) -join "`r`n").Trim()
    $json = (@($lines | Where-Object { $_ -isnot [System.Management.Automation.ErrorRecord] } | ForEach-Object { [string]$_ }) -join "`n").Trim()
    if ($code -ne 0) {
        $getVersionError = 'wins.exe cli hst get-version exited ' + $code + ': ' + $output
    } else {
        # Empty or whitespace output parses to $null without an error.
        $parsed = $null
        if ($json.StartsWith('{')) {
            try { $parsed = ConvertFrom-Json -InputObject $json } catch { $null = $_ }
        }
        if ($null -eq $parsed) {
            $getVersionError = 'wins.exe cli hst get-version printed no JSON: ' + $output
        } else {
            foreach ($k in $keys) { $getVersion[$k] = $parsed.$k }
        }
    }
}

$deep = $null
if ($SwdtParams.deep) {
    $smoke = [string]$SwdtParams.smokePath
    $deep = [ordered]@{ ok = $false; output = ''; expected = [Environment]::MachineName; error = ''; leftovers = @() }
    try {
        [System.IO.File]::Copy([string](Join-Path $env:SystemRoot 'System32\HOSTNAME.EXE'), [string]$smoke, $true)
        $output = (& { $ErrorActionPreference = 'Continue'; & $binary cli prc run --path $smoke 2>&1 } | ForEach-Object { [string]$_ }) -join "`r`n"
        $code = $LASTEXITCODE
        $deep.output = $output.Trim()
        if ($code -ne 0) {
            $deep.error = 'wins.exe cli prc run exited ' + $code
        } elseif (-not $output.Contains($deep.expected)) {
            $deep.error = 'the process ran but did not print the hostname'
        } else {
            $deep.ok = $true
        }
    } catch {
        $deep.error = $_.Exception.Message
    }
    # Clean up: the host process wins started, its renamed copy, the smoke
    # copy. Only the smoke's own process: other rancher-wins-* processes
    # are workloads wins runs for containers (kube-proxy, CNI agents).
    # Names are matched here, never spliced into the WQL filter.
    $smokeDir = Split-Path -Path $smoke -Parent
    $smokeLeaf = Split-Path -Path $smoke -Leaf
    $renamedLeaf = 'rancher-wins-' + $smokeLeaf
    $renamed = Join-Path $smokeDir $renamedLeaf
    $mine = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | Where-Object { $_.Name -eq $renamedLeaf })
    foreach ($p in $mine) {
        $handle = Get-Process -Id $p.ProcessId -ErrorAction SilentlyContinue
        Stop-Process -Id $p.ProcessId -Force -ErrorAction SilentlyContinue
        # Stop-Process does not wait: the image stays locked until the
        # process is gone, and removing it sooner would fail.
        if ($null -ne $handle) { [void]$handle.WaitForExit(10000) }
    }
    foreach ($f in @($renamed, $smoke)) {
        if (Test-Path -LiteralPath $f) {
            try { Remove-Item -LiteralPath $f -Force } catch { $deep.leftovers += $f }
        }
    }
    $running = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | Where-Object { $_.Name -eq $renamedLeaf })
    foreach ($p in $running) { $deep.leftovers += ('process ' + $p.ProcessId + ' ' + $p.Name) }
}

Write-SwdtResult -Data ([ordered]@{ service = $service; pipes = $pipes; getVersion = $getVersion; getVersionError = $getVersionError; registry = $registry; deep = $deep })
