# script: firewall-rules
# language: constrained
# Reads Windows Defender Firewall rules by name (names are not localized;
# display groups are). Runs after request-prelude.ps1 (request in
# $request): {"names":["..."]}. Output: one JSON array of {name, exists,
# enabled}, in input order.
$rules = @()
foreach ($name in @($request.names | Where-Object { $null -ne $_ })) {
    $rule = Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue
    if ($null -eq $rule) {
        $rules += [ordered]@{ name = [string]$name; exists = $false; enabled = $false }
    } else {
        $rules += [ordered]@{ name = [string]$name; exists = $true; enabled = ([string]$rule.Enabled -eq 'True') }
    }
}
Write-SwdtJson -Object @($rules) -Depth 3
