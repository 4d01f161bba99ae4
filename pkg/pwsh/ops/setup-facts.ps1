# op: setup-facts
# Everything swdt setup plans from, in one round trip: OS and account, RDP
# and its firewall rules, Chocolatey and its packages, and the state of
# administrators_authorized_keys.
$cv = Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$identity = [System.Security.Principal.WindowsIdentity]::GetCurrent()
$principal = New-Object System.Security.Principal.WindowsPrincipal $identity
$ubr = 0
if ($null -ne $cv.UBR) { $ubr = [int]$cv.UBR }
$node = [ordered]@{
    hostname       = [Environment]::MachineName
    productName    = [string]$cv.ProductName
    displayVersion = [string]$cv.DisplayVersion
    currentBuild   = [string]$cv.CurrentBuild
    ubr            = $ubr
    username       = $identity.Name
    isAdmin        = [bool]$principal.IsInRole([System.Security.Principal.WindowsBuiltInRole]::Administrator)
    psVersion      = $PSVersionTable.PSVersion.ToString()
}

$ts = Get-ItemProperty -Path 'HKLM:\System\CurrentControlSet\Control\Terminal Server'
$rdpTcp = Get-ItemProperty -Path 'HKLM:\System\CurrentControlSet\Control\Terminal Server\WinStations\RDP-Tcp'
$rules = foreach ($name in @($SwdtParams.firewallRules | Where-Object { $null -ne $_ })) {
    $rule = Get-NetFirewallRule -Name $name -ErrorAction SilentlyContinue
    [ordered]@{ name = [string]$name; exists = ($null -ne $rule); enabled = ($null -ne $rule -and [string]$rule.Enabled -eq 'True') }
}
$rdp = [ordered]@{ enabled = ([int]$ts.fDenyTSConnections -eq 0); nla = ([int]$rdpTcp.UserAuthentication -eq 1); firewallRules = @($rules) }

# choco.exe by full path: sessions keep sshd's PATH from before the install.
$chocoExe = Join-Path $env:ProgramData 'chocolatey\choco.exe'
$choco = [ordered]@{ installed = $false; version = ''; packages = @() }
if (Test-Path -LiteralPath $chocoExe -PathType Leaf) {
    $choco.installed = $true
    # 5.1 turns a native command's redirected stderr into a terminating
    # error under 'Stop': relax the preference in a child scope.
    $choco.version = ([string](& { $ErrorActionPreference = 'Continue'; & $chocoExe --version 2>$null } | Select-Object -First 1)).Trim()
    # v2 lists local packages by default and rejects --local-only; v1 needs it.
    $listArgs = @('list', '--limit-output')
    if ($choco.version -match '^[01]\.') { $listArgs += '--local-only' }
    $lines = & { $ErrorActionPreference = 'Continue'; & $chocoExe @listArgs 2>$null }
    $choco.packages = @(foreach ($line in @($lines)) {
        $parts = ([string]$line).Split('|')
        if ($parts.Count -eq 2) { [ordered]@{ name = $parts[0]; version = $parts[1] } }
    })
}

$keysPath = Join-Path $env:ProgramData 'ssh\administrators_authorized_keys'
$keys = [ordered]@{ exists = $false; keys = @(); aclOk = $false; added = 0 }
# Only administrators may read the file once its ACL is right; for anyone
# else the facts must still arrive, so that setup can say who must run it.
if ($node.isAdmin -and (Test-Path -LiteralPath $keysPath -PathType Leaf)) {
    $keys.exists = $true
    $keys.keys = @(Get-Content -LiteralPath $keysPath | ForEach-Object { $_.Trim() } | Where-Object { $_ -and -not $_.StartsWith('#') })
    $acl = Get-Acl -LiteralPath $keysPath
    $allowed = @('S-1-5-32-544', 'S-1-5-18')
    # Read as SIDs directly: translating names back throws for some
    # built-in accounts (APPLICATION PACKAGE AUTHORITY\...).
    $sids = @($acl.GetAccessRules($true, $true, [System.Security.Principal.SecurityIdentifier]) | ForEach-Object { $_.IdentityReference.Value })
    $keys.aclOk = $acl.AreAccessRulesProtected -and (@($sids | Where-Object { $allowed -notcontains $_ }).Count -eq 0)
}

Write-SwdtResult -Data ([ordered]@{ node = $node; rdp = $rdp; choco = $choco; authorizedKeys = $keys })
