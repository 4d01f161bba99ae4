# op: rdp-set
# Turns Remote Desktop on or off: fDenyTSConnections and the Remote Desktop
# firewall rules, addressed by rule name because display-group names are
# localized. Reads the state back so the caller can verify it.
$enable = [bool]$SwdtParams.enable
$deny = 1
if ($enable) { $deny = 0 }
Set-ItemProperty -Path 'HKLM:\System\CurrentControlSet\Control\Terminal Server' -Name 'fDenyTSConnections' -Value $deny -Type DWord
foreach ($name in @($SwdtParams.firewallRules | Where-Object { $null -ne $_ })) {
    $rule = Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue
    if ($null -eq $rule) {
        Stop-SwdtOp -Kind 'not-found' -Message ("firewall rule " + $name + " does not exist on this node")
    }
    if ($enable) { Enable-NetFirewallRule -Name $name } else { Disable-NetFirewallRule -Name $name }
}

$ts = Get-ItemProperty -Path 'HKLM:\System\CurrentControlSet\Control\Terminal Server'
$rdpTcp = Get-ItemProperty -Path 'HKLM:\System\CurrentControlSet\Control\Terminal Server\WinStations\RDP-Tcp'
$rules = foreach ($name in @($SwdtParams.firewallRules | Where-Object { $null -ne $_ })) {
    $rule = Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue
    [ordered]@{ name = [string]$name; exists = ($null -ne $rule); enabled = ($null -ne $rule -and [string]$rule.Enabled -eq 'True') }
}
Write-SwdtResult -Data ([ordered]@{ enabled = ([int]$ts.fDenyTSConnections -eq 0); nla = ([int]$rdpTcp.UserAuthentication -eq 1); firewallRules = @($rules) })
