# script: firewall-rule-remove
# language: constrained
# Deletes Windows Defender Firewall rules by name; a missing rule is
# skipped. Runs after request-prelude.ps1 (request in $request):
# {"names":["..."]}. Output: {"removed": [the names that existed]}; a
# failure is the prelude's failure line.
$removed = @()
foreach ($name in @($request.names | Where-Object { $null -ne $_ })) {
    $rule = Get-NetFirewallRule -Name ([string]$name) -ErrorAction SilentlyContinue
    if ($null -ne $rule) {
        Remove-NetFirewallRule -Name ([string]$name)
        $removed += [string]$name
    }
}
Write-SwdtJson -Object ([ordered]@{ removed = @($removed) })
