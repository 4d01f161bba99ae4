# script: firewall-set
# language: constrained
# Enables or disables Windows Defender Firewall rules by name. Runs after
# request-prelude.ps1 (request in $request): {"names":["..."],"enabled":true}.
# A missing rule is an error.
$names = @($request.names | Where-Object { $null -ne $_ })
if ($names.Count -gt 0) {
    if ($request.enabled -eq $true) {
        Enable-NetFirewallRule -Name $names
    } else {
        Disable-NetFirewallRule -Name $names
    }
}
