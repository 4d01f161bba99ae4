# script: service-events
# language: constrained
# Reads the Service Control Manager's System event log messages that name
# a service (by service or display name: the SCM writes display names).
# Runs after request-prelude.ps1 (request in $request):
# {"names":["..."],"since":"2006-01-02T15:04:05Z","max":5}.
# Output: one JSON array of strings, newest first.
#
# Only core types: the time is converted with a [datetime] cast (the
# invariant culture; a trailing Z makes it UTC, converted to local time),
# names are matched case-insensitively by upper-casing both sides.
$names = @($request.names | Where-Object { $null -ne $_ -and [string]$_ -ne '' } | ForEach-Object { ([string]$_).ToUpperInvariant() })
$since = $request.since
if ($since -isnot [datetime]) {
    $since = [datetime][string]$since
}
$filter = @{ LogName = 'System'; ProviderName = 'Service Control Manager'; StartTime = $since.ToLocalTime() }
$found = @(Get-WinEvent -FilterHashtable $filter -ErrorAction SilentlyContinue)
$lines = @()
foreach ($event in $found) {
    if ($lines.Count -ge [int]$request.max) { break }
    $message = [string]$event.Message
    $upper = $message.ToUpperInvariant()
    foreach ($name in $names) {
        if ($upper.Contains($name)) {
            $lines += ($event.TimeCreated.ToUniversalTime().ToString('o') + ' ' + $message)
            break
        }
    }
}
Write-SwdtJson -Object @($lines)
