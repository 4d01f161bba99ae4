# script: firewall-rule-create
# language: constrained
# Creates an enabled Windows Defender Firewall rule that allows one local
# port, on every profile (as sig-windows-tools' PrepareNode.ps1 opens the
# kubelet's port). Runs after request-prelude.ps1 (request in $request):
# {"name", "displayName", "direction": "Inbound"|"Outbound",
# "protocol": "TCP"|"UDP", "port": 1-65535}. Every value is a parameter,
# never script text. Output: {"created": true}; a failure is the
# prelude's failure line.
$direction = [string]$request.direction
$protocol = [string]$request.protocol
$port = [int]$request.port
if ($direction -ne 'Inbound' -and $direction -ne 'Outbound') { throw "direction '$direction' is not Inbound or Outbound" }
if ($protocol -ne 'TCP' -and $protocol -ne 'UDP') { throw "protocol '$protocol' is not TCP or UDP" }
if ($port -lt 1 -or $port -gt 65535) { throw "port $port is not between 1 and 65535" }
$null = New-NetFirewallRule -Name ([string]$request.name) -DisplayName ([string]$request.displayName) -Direction $direction -Protocol $protocol -LocalPort $port -Action Allow -Profile Any -Enabled True
Write-SwdtJson -Object ([ordered]@{ created = $true })
