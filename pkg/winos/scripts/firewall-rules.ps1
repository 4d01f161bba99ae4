# script: firewall-rules
# Reads Windows Defender Firewall rules by name (names are not localized;
# display groups are). Input on stdin: {"names":["..."]}. Output: one JSON
# array of {name, exists, enabled}, in input order.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$reader = New-Object System.IO.StreamReader([Console]::OpenStandardInput(), (New-Object System.Text.UTF8Encoding($false)))
$request = $reader.ReadToEnd() | ConvertFrom-Json
$rules = @()
foreach ($name in @($request.names | Where-Object { $null -ne $_ })) {
    $rule = Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue
    if ($null -eq $rule) {
        $rules += [ordered]@{ name = [string]$name; exists = $false; enabled = $false }
    } else {
        $rules += [ordered]@{ name = [string]$name; exists = $true; enabled = ([string]$rule.Enabled -eq 'True') }
    }
}
[Console]::OutputEncoding = New-Object System.Text.UTF8Encoding($false)
ConvertTo-Json -InputObject @($rules) -Compress -Depth 3
