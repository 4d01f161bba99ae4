# op: service-swap
# One hot-swap transaction, run on the node so that downtime does not depend
# on network round trips:
#   1. stop services in stopOrder (dependents first); a stop that outlives
#      stopTimeoutMs has its process killed; wait for the process to exit;
#   2. per item: keep the old binary as .swdt-bak, rename the staged file
#      into place (renaming works even while a file is mapped; overwriting
#      does not, which is why nothing is ever copied onto a destination);
#   3. start services in startOrder (dependencies first), each reaching
#      Running before the next starts; then one settle period for all of
#      them, so downtime does not grow with every service; then make sure
#      each is still Running and run the swapped items' health checks;
#   4. when a swapped item failed: stop the started services (dependents
#      first, so none holds a service being rolled back), keep its new
#      binary as .swdt-failed, put the backup back, and start them all again.
Add-Type -AssemblyName System.ServiceProcess
$request = $SwdtParams
# Go sends a nil list as null, and @($null) is one $null element, not an
# empty array: every list from the request is read without nulls.
$requestItems = @($request.items | Where-Object { $null -ne $_ })
$stopOrder = @($request.stopOrder | Where-Object { $null -ne $_ })
$startOrder = @($request.startOrder | Where-Object { $null -ne $_ })
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
    # Hold the process open from before the stop: while a handle is open
    # Windows cannot give its PID to another process, so the wait and the
    # kill below cannot hit an unrelated one that reused the PID once the
    # service exited (best effort: opening the handle may be refused).
    $process = $null
    if ($ProcessId -gt 0) {
        $process = Get-Process -Id $ProcessId -ErrorAction SilentlyContinue
        if ($null -ne $process) {
            try { $null = $process.Handle } catch { $null = $_ }
        }
    }
    # A starting service cannot take a stop control (error 1061): give it
    # the stop timeout to finish starting first.
    $deadline = [DateTime]::UtcNow.AddMilliseconds($TimeoutMs)
    while ($sc.Status -eq 'StartPending' -and [DateTime]::UtcNow -lt $deadline) {
        Start-Sleep -Milliseconds 100
        $sc.Refresh()
    }
    if ($sc.Status -ne 'Stopped') {
        if ($sc.Status -ne 'StopPending') {
            # A service that still refuses the control (or stopped just
            # now) is handled by the wait below: past the timeout it is
            # killed.
            try { $sc.Stop() } catch { $null = $_ }
        }
        try {
            $sc.WaitForStatus('Stopped', [TimeSpan]::FromMilliseconds($TimeoutMs))
        } catch [System.ServiceProcess.TimeoutException] {
            if ($null -ne $process) {
                try { $process.Kill(); $killed = $true } catch { $null = $_ }
            }
            $sc.WaitForStatus('Stopped', [TimeSpan]::FromMilliseconds($TimeoutMs))
        }
    }
    if ($null -ne $process -and -not $process.WaitForExit($TimeoutMs)) {
        # Kill throws when the process exited in the meantime.
        try { $process.Kill() } catch { $null = $_ }
        $killed = $true
        if (-not $process.WaitForExit($TimeoutMs)) {
            Stop-SwdtOp -Kind 'timeout' -Message ("process " + $ProcessId + " of service " + $Name + " did not exit after being killed")
        }
    }
    $killed
}

function Start-SwdtService {
    # Returns '' when the service reached Running, else why not.
    param([string] $Name, [int] $TimeoutMs)
    $sc = New-Object System.ServiceProcess.ServiceController $Name
    try {
        # Start() on a StartPending service throws (error 1056): wait instead.
        if ($sc.Status -ne 'Running' -and $sc.Status -ne 'StartPending') { $sc.Start() }
        $sc.WaitForStatus('Running', [TimeSpan]::FromMilliseconds($TimeoutMs))
    } catch {
        $why = $_.Exception.Message
        $status = 'Stopped'
        try { $sc.Refresh(); $status = [string]$sc.Status } catch { $null = $_ }
        return ("service did not reach Running within " + $TimeoutMs + " ms (status " + $status + "): " + $why)
    }
    ''
}

function Start-SwdtServices {
    # Starts Names in order, waits settleMs once, and checks each is still
    # Running. Returns a hashtable name -> failure for the ones that are not,
    # and records when each reached Running in $runningAt.
    param([string[]] $Names)
    $failures = @{}
    foreach ($name in $Names) {
        $failure = Start-SwdtService -Name $name -TimeoutMs $request.startTimeoutMs
        if ($failure) { $failures[$name] = $failure; $runningAt.Remove($name) } else { $runningAt[$name] = $clock.ElapsedMilliseconds }
    }
    if ($request.settleMs -gt 0 -and @($Names).Count -gt 0) { Start-Sleep -Milliseconds $request.settleMs }
    foreach ($name in $Names) {
        if ($failures.ContainsKey($name)) { continue }
        $sc = New-Object System.ServiceProcess.ServiceController $name
        if ($sc.Status -ne 'Running') {
            $failures[$name] = "service stopped again within " + $request.settleMs + " ms of starting (status " + $sc.Status + ")"
        }
    }
    $failures
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
        # .NET Framework throws on a pipe whose name is not a valid path;
        # that must fail this round of checks, not end the op half-way.
        try {
            $names = @([System.IO.Directory]::GetFiles('\\.\pipe\') | ForEach-Object { [System.IO.Path]::GetFileName($_) })
        } catch {
            return ("could not list named pipes: " + $_.Exception.Message)
        }
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
            try { $process.Kill() } catch { $null = $_ }
            return ("command " + $psi.FileName + " did not exit within " + $TimeoutMs + " ms")
        }
        if ($process.ExitCode -eq 0) { return '' }
        # A child the command left running may hold its output pipes open:
        # never wait for the output without a bound.
        $output = ''
        if ($stdout.Wait(2000)) { $output += $stdout.Result }
        if ($stderr.Wait(2000)) { $output += $stderr.Result }
        $output = $output.Trim()
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
        # Both are UInt32: an NTSTATUS such as 0xC0000005 does not fit [int].
        $exitCode = [int64]$svc.ExitCode
        if ($svc.ServiceSpecificExitCode) { $exitCode = [int64]$svc.ServiceSpecificExitCode }
        $displayName = [string]$svc.DisplayName
    }
    $events = @()
    try {
        $events = @(Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Service Control Manager'; StartTime = $Since } -MaxEvents 50 |
            Where-Object { ([string]$_.Message).Contains($displayName) -or ([string]$_.Message).Contains($Name) } |
            Select-Object -First 5 |
            ForEach-Object { $_.TimeCreated.ToString('s') + ' ' + [string]$_.Message })
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
foreach ($item in $requestItems) {
    if (-not (Test-Path -LiteralPath $item.staged -PathType Leaf)) {
        Stop-SwdtOp -Kind 'not-found' -Message ("staged file " + $item.staged + " is missing; nothing was stopped")
    }
    if (Test-Path -LiteralPath $item.backup) { Remove-Item -LiteralPath $item.backup -Force }
    $results[$item.service] = [ordered]@{ service = $item.service; destination = $item.destination; result = 'pending'; error = ''; exitCode = 0; events = @(); downtimeMs = 0 }
}

$pids = @{}
foreach ($svc in (Get-CimInstance -ClassName Win32_Service)) { $pids[$svc.Name] = [int]$svc.ProcessId }

foreach ($name in $stopOrder) {
    $stoppedAt[$name] = $clock.ElapsedMilliseconds
    if (Stop-SwdtService -Name $name -ProcessId ([int]$pids[$name]) -TimeoutMs $request.stopTimeoutMs) {
        [void]$killed.Add($name)
    }
}

foreach ($item in $requestItems) {
    $result = $results[$item.service]
    $hadOld = Test-Path -LiteralPath $item.destination -PathType Leaf
    $parent = Split-Path -Path $item.destination -Parent
    if (-not (Test-Path -LiteralPath $parent)) { [void](New-Item -ItemType Directory -Path $parent -Force) }
    try {
        if ($hadOld) { [System.IO.File]::Move([string]$item.destination, [string]$item.backup) }
        [System.IO.File]::Move([string]$item.staged, [string]$item.destination)
        $result.result = 'swapped'
    } catch {
        $result.result = 'failed'
        $result.error = 'could not rename the staged binary into place: ' + $_.Exception.Message
        if ($hadOld -and -not (Test-Path -LiteralPath $item.destination) -and (Test-Path -LiteralPath $item.backup)) {
            [System.IO.File]::Move([string]$item.backup, [string]$item.destination)
        }
    }
}

$itemsByService = @{}
foreach ($item in $requestItems) { $itemsByService[$item.service] = $item }
$runningAt = @{}

$failures = Start-SwdtServices -Names $startOrder
foreach ($name in $startOrder) {
    $item = $itemsByService[$name]
    if ($failures.ContainsKey($name) -or $null -eq $item -or $results[$name].result -ne 'swapped') { continue }
    $failure = Test-SwdtHealth -Checks $item.healthChecks -TimeoutMs $request.healthTimeoutMs
    if ($failure) { $failures[$name] = 'health check failed: ' + $failure }
}

$rollback = @($startOrder | Where-Object {
    $failures.ContainsKey($_) -and $null -ne $itemsByService[$_] -and $results[$_].result -eq 'swapped' -and (Test-Path -LiteralPath $itemsByService[$_].backup)
})
if ($rollback.Count -gt 0) {
    foreach ($name in $rollback) {
        $why = Get-SwdtServiceFailure -Name $name -Since $opStarted
        $results[$name].exitCode = $why.exitCode
        $results[$name].events = $why.events
        $results[$name].error = $failures[$name]
    }
    for ($i = $startOrder.Count - 1; $i -ge 0; $i--) {
        [void](Stop-SwdtService -Name $startOrder[$i] -ProcessId (Get-SwdtServicePid -Name $startOrder[$i]) -TimeoutMs $request.stopTimeoutMs)
    }
    foreach ($name in $rollback) {
        $item = $itemsByService[$name]
        $failed = $item.destination + '.swdt-failed'
        if (Test-Path -LiteralPath $failed) { Remove-Item -LiteralPath $failed -Force }
        [System.IO.File]::Move([string]$item.destination, [string]$failed)
        [System.IO.File]::Move([string]$item.backup, [string]$item.destination)
        $results[$name].result = 'rolled-back'
        $results[$name].error = $results[$name].error + '; the new binary was kept as ' + $failed
    }
    $failures = Start-SwdtServices -Names $startOrder
    foreach ($name in $rollback) {
        if ($failures.ContainsKey($name)) {
            $results[$name].result = 'failed'
            $results[$name].error = $results[$name].error + '; the old binary was restored but did not start either: ' + $failures[$name]
        }
    }
}

foreach ($name in $startOrder) {
    $item = $itemsByService[$name]
    if ($failures.ContainsKey($name)) {
        [void]$notStarted.Add([ordered]@{ service = $name; error = $failures[$name] })
        if ($null -ne $item -and $results[$name].result -eq 'swapped') {
            $results[$name].result = 'failed'
            $results[$name].error = $failures[$name]
        } elseif ($null -ne $item -and $results[$name].result -eq 'failed' -and $rollback -notcontains $name) {
            $results[$name].error = (@($results[$name].error, $failures[$name]) | Where-Object { $_ }) -join '; '
        }
    }
    if ($null -ne $item -and $stoppedAt.ContainsKey($name) -and $runningAt.ContainsKey($name)) {
        $results[$name].downtimeMs = $runningAt[$name] - $stoppedAt[$name]
    }
}

Write-SwdtResult -Data ([ordered]@{
    items      = @($results.Values)
    killed     = $killed.ToArray()
    notStarted = $notStarted.ToArray()
})
