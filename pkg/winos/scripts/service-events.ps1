# script: service-events
# Reads the Service Control Manager's System event log messages that name
# a service (by service or display name: the SCM writes display names).
# Input on stdin: {"names":["..."],"since":"2006-01-02T15:04:05Z","max":5}.
# Output: one JSON array of strings, newest first.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$reader = New-Object System.IO.StreamReader([Console]::OpenStandardInput(), (New-Object System.Text.UTF8Encoding($false)))
$request = $reader.ReadToEnd() | ConvertFrom-Json
$names = @($request.names | Where-Object { $null -ne $_ -and [string]$_ -ne '' })
$since = [datetime]::Parse([string]$request.since, [System.Globalization.CultureInfo]::InvariantCulture, [System.Globalization.DateTimeStyles]::RoundtripKind)
$filter = @{ LogName = 'System'; ProviderName = 'Service Control Manager'; StartTime = $since.ToLocalTime() }
$found = @(Get-WinEvent -FilterHashtable $filter -ErrorAction SilentlyContinue)
$lines = @()
foreach ($event in $found) {
    if ($lines.Count -ge [int]$request.max) { break }
    $message = [string]$event.Message
    foreach ($name in $names) {
        if ($message.IndexOf([string]$name, [System.StringComparison]::OrdinalIgnoreCase) -ge 0) {
            $lines += ($event.TimeCreated.ToUniversalTime().ToString('o') + ' ' + $message)
            break
        }
    }
}
[Console]::OutputEncoding = New-Object System.Text.UTF8Encoding($false)
ConvertTo-Json -InputObject @($lines) -Compress
