# script: firewall-set
# Enables or disables Windows Defender Firewall rules by name. Input on
# stdin: {"names":["..."],"enabled":true}. A missing rule is an error.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$reader = New-Object System.IO.StreamReader([Console]::OpenStandardInput(), (New-Object System.Text.UTF8Encoding($false)))
$request = $reader.ReadToEnd() | ConvertFrom-Json
$names = @($request.names | Where-Object { $null -ne $_ })
if ($names.Count -gt 0) {
    if ($request.enabled -eq $true) {
        Enable-NetFirewallRule -Name $names
    } else {
        Disable-NetFirewallRule -Name $names
    }
}
