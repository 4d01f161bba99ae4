# op: service-swap
# One hot-swap transaction, run on the node so that downtime does not depend
# on network round trips:
#   1. stop services in stopOrder (dependents first); a stop that outlives
#      stopTimeoutMs has its process killed; wait for the process to exit;
#   2. per item: keep the old binary as .swdt-bak, rename the staged file
#      into place (renaming works even while a file is mapped; overwriting
#      does not, which is why nothing is ever copied onto a destination);
#   3. start services in startOrder (dependencies first), wait for Running,
#      make sure they stay Running for settleMs, run health checks;
#   4. a swapped service that fails is rolled back: its new binary is kept
#      as .swdt-failed, the backup is put back and the service started again.
Add-Type -AssemblyName System.ServiceProcess
$request = $SwdtParams
$clock = [System.Diagnostics.Stopwatch]::StartNew()
$opStarted = Get-Date

function Get-SwdtServicePid {
    param([string] $Name)
    $svc = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
    if ($null -eq $svc) { return 0 }
    [int]$svc.ProcessId
}

function Stop-SwdtService {
    # Returns $true when the process had to be killed.
    param([string] $Name, [int] $ProcessId, [int] $TimeoutMs)
    $sc = New-Object System.ServiceProcess.ServiceController $Name
    $killed = $false
    if ($sc.Status -ne 'Stopped') {
        if ($sc.Status -ne 'StopPending') { $sc.Stop() }
        try {
            $sc.WaitForStatus('Stopped', [TimeSpan]::FromMilliseconds($TimeoutMs))
        } catch [System.ServiceProcess.TimeoutException] {
            if ($ProcessId -gt 0) {
                Stop-Process -Id $ProcessId -Force -ErrorAction SilentlyContinue
                $killed = $true
            }
            $sc.WaitForStatus('Stopped', [TimeSpan]::FromMilliseconds($TimeoutMs))
        }
    }
    if ($ProcessId -gt 0) {
        $process = Get-Process -Id $ProcessId -ErrorAction SilentlyContinue
        if ($null -ne $process -and -not $process.WaitForExit($TimeoutMs)) {
            $process.Kill()
            $killed = $true
            if (-not $process.WaitForExit($TimeoutMs)) {
                Stop-SwdtOp -Kind 'timeout' -Message ("process " + $ProcessId + " of service " + $Name + " did not exit after being killed")
            }
        }
    }
    $killed
}

function Start-SwdtService {
    # Returns '' when the service is Running and stayed Running, else why not.
    param([string] $Name, [int] $TimeoutMs, [int] $SettleMs)
    $sc = New-Object System.ServiceProcess.ServiceController $Name
    try {
        if ($sc.Status -ne 'Running') { $sc.Start() }
        $sc.WaitForStatus('Running', [TimeSpan]::FromMilliseconds($TimeoutMs))
    } catch {
        $sc.Refresh()
        return ("service did not reach Running within " + $TimeoutMs + " ms (status " + $sc.Status + "): " + $_.Exception.Message)
    }
    if ($SettleMs -gt 0) { Start-Sleep -Milliseconds $SettleMs }
    $sc.Refresh()
    if ($sc.Status -ne 'Running') {
        return ("service stopped again within " + $SettleMs + " ms of starting (status " + $sc.Status + ")")
    }
    ''
}

function Join-SwdtArgv {
    # Quotes arguments by the rules CommandLineToArgvW parses.
    param([string[]] $Arguments)
    $quoted = foreach ($a in $Arguments) {
        if ($a.Length -gt 0 -and $a -notmatch '[\s"]') { $a }
        else { '"' + (($a -replace '(\\*)"', '$1$1\"') -replace '(\\+)$', '$1$1') + '"' }
    }
    $quoted -join ' '
}

function Test-SwdtHealthCheck {
    # Returns '' when the check passes, else why not.
    param($Check, [int] $TimeoutMs)
    if ($Check.namedPipe) {
        $names = @([System.IO.Directory]::GetFiles('\\.\pipe\') | ForEach-Object { [System.IO.Path]::GetFileName($_) })
        if ($names -contains $Check.namedPipe) { return '' }
        return ("named pipe \\.\pipe\" + $Check.namedPipe + " does not exist")
    }
    if ($Check.tcpPort) {
        $listening = Get-NetTCPConnection -State Listen -LocalPort ([int]$Check.tcpPort) -ErrorAction SilentlyContinue
        if ($listening) { return '' }
        return ("nothing listens on TCP port " + $Check.tcpPort)
    }
    if ($Check.command) {
        $argv = @($Check.command)
        $psi = New-Object System.Diagnostics.ProcessStartInfo
        $psi.FileName = [string]$argv[0]
        $psi.Arguments = Join-SwdtArgv -Arguments @($argv | Select-Object -Skip 1)
        $psi.UseShellExecute = $false
        $psi.RedirectStandardOutput = $true
        $psi.RedirectStandardError = $true
        try {
            $process = [System.Diagnostics.Process]::Start($psi)
        } catch {
            # A missing executable must fail the check, not end the op
            # half-way through starting services.
            return ("command " + $psi.FileName + " could not be started: " + $_.Exception.Message)
        }
        $stdout = $process.StandardOutput.ReadToEndAsync()
        $stderr = $process.StandardError.ReadToEndAsync()
        if (-not $process.WaitForExit($TimeoutMs)) {
            $process.Kill()
            return ("command " + $psi.FileName + " did not exit within " + $TimeoutMs + " ms")
        }
        if ($process.ExitCode -eq 0) { return '' }
        $output = ($stdout.Result + $stderr.Result).Trim()
        if ($output.Length -gt 400) { $output = $output.Substring($output.Length - 400) }
        return ("command " + $psi.FileName + " exited " + $process.ExitCode + ": " + $output)
    }
    'empty health check'
}

function Test-SwdtHealth {
    # Retries all checks until they pass or TimeoutMs runs out.
    param($Checks, [int] $TimeoutMs)
    $deadline = [DateTime]::UtcNow.AddMilliseconds($TimeoutMs)
    while ($true) {
        $failure = ''
        foreach ($check in @($Checks)) {
            if ($null -eq $check) { continue }
            $failure = Test-SwdtHealthCheck -Check $check -TimeoutMs $TimeoutMs
            if ($failure) { break }
        }
        if (-not $failure -or [DateTime]::UtcNow -ge $deadline) { return $failure }
        Start-Sleep -Milliseconds 250
    }
}

function Get-SwdtServiceFailure {
    # The service's last exit code and its recent Service Control Manager
    # events, to explain a failed start.
    param([string] $Name, [datetime] $Since)
    $exitCode = 0
    $displayName = $Name
    $svc = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $Name }
    if ($null -ne $svc) {
        $exitCode = [int]$svc.ExitCode
        if ($svc.ServiceSpecificExitCode) { $exitCode = [int]$svc.ServiceSpecificExitCode }
        $displayName = [string]$svc.DisplayName
    }
    $events = @()
    try {
        $events = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Service Control Manager'; StartTime = $Since } -MaxEvents 50 |
            Where-Object { $_.Message.Contains($displayName) -or $_.Message.Contains($Name) } |
            Select-Object -First 5 |
            ForEach-Object { $_.TimeCreated.ToString('s') + ' ' + $_.Message })
    } catch {
        $events = @()
    }
    [ordered]@{ exitCode = $exitCode; events = $events }
}

$results = [ordered]@{}
$stoppedAt = @{}
$killed = New-Object System.Collections.ArrayList
$notStarted = New-Object System.Collections.ArrayList

# Before anything stops: a staged file must be there, and an old backup is
# cleared so that the renames below cannot fail on it.
foreach ($item in @($request.items)) {
    if (-not (Test-Path -LiteralPath $item.staged -PathType Leaf)) {
        Stop-SwdtOp -Kind 'not-found' -Message ("staged file " + $item.staged + " is missing; nothing was stopped")
    }
    if (Test-Path -LiteralPath $item.backup) { Remove-Item -LiteralPath $item.backup -Force }
    $results[$item.service] = [ordered]@{ service = $item.service; destination = $item.destination; result = 'pending'; error = ''; exitCode = 0; events = @(); downtimeMs = 0 }
}

$pids = @{}
foreach ($svc in (Get-CimInstance -ClassName Win32_Service)) { $pids[$svc.Name] = [int]$svc.ProcessId }

foreach ($name in @($request.stopOrder)) {
    $stoppedAt[$name] = $clock.ElapsedMilliseconds
    if (Stop-SwdtService -Name $name -ProcessId ([int]$pids[$name]) -TimeoutMs $request.stopTimeoutMs) {
        [void]$killed.Add($name)
    }
}

foreach ($item in @($request.items)) {
    $result = $results[$item.service]
    $hadOld = Test-Path -LiteralPath $item.destination -PathType Leaf
    $parent = Split-Path -Path $item.destination -Parent
    if (-not (Test-Path -LiteralPath $parent)) { [void](New-Item -ItemType Directory -Path $parent -Force) }
    try {
        if ($hadOld) { Move-Item -LiteralPath $item.destination -Destination $item.backup }
        Move-Item -LiteralPath $item.staged -Destination $item.destination
        $result.result = 'swapped'
    } catch {
        $result.result = 'failed'
        $result.error = 'could not rename the staged binary into place: ' + $_.Exception.Message
        if ($hadOld -and -not (Test-Path -LiteralPath $item.destination) -and (Test-Path -LiteralPath $item.backup)) {
            Move-Item -LiteralPath $item.backup -Destination $item.destination
        }
    }
}

$itemsByService = @{}
foreach ($item in @($request.items)) { $itemsByService[$item.service] = $item }

foreach ($name in @($request.startOrder)) {
    $failure = Start-SwdtService -Name $name -TimeoutMs $request.startTimeoutMs -SettleMs $request.settleMs
    $item = $itemsByService[$name]
    if (-not $failure -and $null -ne $item -and $results[$name].result -eq 'swapped') {
        $failure = Test-SwdtHealth -Checks $item.healthChecks -TimeoutMs $request.healthTimeoutMs
        if ($failure) { $failure = 'health check failed: ' + $failure }
    }
    if ($failure -and $null -ne $item -and $results[$name].result -eq 'swapped' -and (Test-Path -LiteralPath $item.backup)) {
        $result = $results[$name]
        $why = Get-SwdtServiceFailure -Name $name -Since $opStarted
        $result.exitCode = $why.exitCode
        $result.events = $why.events
        [void](Stop-SwdtService -Name $name -ProcessId (Get-SwdtServicePid -Name $name) -TimeoutMs $request.stopTimeoutMs)
        $failed = $item.destination + '.swdt-failed'
        if (Test-Path -LiteralPath $failed) { Remove-Item -LiteralPath $failed -Force }
        Move-Item -LiteralPath $item.destination -Destination $failed
        Move-Item -LiteralPath $item.backup -Destination $item.destination
        $again = Start-SwdtService -Name $name -TimeoutMs $request.startTimeoutMs -SettleMs $request.settleMs
        if ($again) {
            $result.result = 'failed'
            $result.error = $failure + '; the old binary was restored but did not start either: ' + $again
        } else {
            $result.result = 'rolled-back'
            $result.error = $failure + '; the new binary was kept as ' + $failed
            $failure = ''
        }
    } elseif ($failure -and $null -ne $item) {
        $results[$name].error = (@($results[$name].error, $failure) | Where-Object { $_ }) -join '; '
        if ($results[$name].result -eq 'swapped') { $results[$name].result = 'failed' }
    }
    if ($failure) {
        [void]$notStarted.Add([ordered]@{ service = $name; error = $failure })
    }
    if ($null -ne $item -and $stoppedAt.ContainsKey($name)) {
        $results[$name].downtimeMs = $clock.ElapsedMilliseconds - $stoppedAt[$name]
    }
}

Write-SwdtResult -Data ([ordered]@{
    items      = @($results.Values)
    killed     = $killed.ToArray()
    notStarted = $notStarted.ToArray()
})
