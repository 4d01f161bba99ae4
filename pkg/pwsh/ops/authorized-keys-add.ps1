# op: authorized-keys-add
# Appends missing public keys to administrators_authorized_keys (never
# removing a line) and restricts the file to Administrators and SYSTEM,
# without which sshd ignores it. SIDs are used because group names are
# localized.
$path = Join-Path $env:ProgramData 'ssh\administrators_authorized_keys'
$dir = Split-Path -Path $path -Parent
if (-not (Test-Path -LiteralPath $dir)) { [void](New-Item -ItemType Directory -Path $dir -Force) }
$present = @()
if (Test-Path -LiteralPath $path -PathType Leaf) {
    $present = @(Get-Content -LiteralPath $path | ForEach-Object { $_.Trim() } | Where-Object { $_ })
}
$added = 0
$utf8 = New-Object System.Text.UTF8Encoding $false
foreach ($key in @($SwdtParams.keys | Where-Object { $null -ne $_ })) {
    $line = ([string]$key).Trim()
    # -ccontains: keys are base64, and -contains ignores case.
    if (-not $line -or $present -ccontains $line) { continue }
    $prefix = ''
    if ((Test-Path -LiteralPath $path -PathType Leaf) -and (Get-Item -LiteralPath $path).Length -gt 0) {
        $bytes = [System.IO.File]::ReadAllBytes($path)
        if ($bytes[$bytes.Length - 1] -ne 10) { $prefix = "`r`n" }
    }
    [System.IO.File]::AppendAllText($path, $prefix + $line + "`r`n", $utf8)
    $present += $line
    $added++
}
if (-not (Test-Path -LiteralPath $path -PathType Leaf)) {
    [System.IO.File]::WriteAllText($path, '', $utf8)
}
$icacls = Join-Path $env:SystemRoot 'System32\icacls.exe'
# 5.1 turns a native command's redirected stderr into a terminating error
# under 'Stop': icacls runs in child scopes with the preference relaxed.
$out = (& { $ErrorActionPreference = 'Continue'; & $icacls $path /inheritance:r /grant '*S-1-5-32-544:F' /grant '*S-1-5-18:F' 2>&1 } | ForEach-Object { [string]$_ }) -join "`r`n"
if ($LASTEXITCODE -ne 0) {
    Stop-SwdtOp -Kind 'acl-failed' -Message ("icacls could not restrict " + $path + ": " + $out.Trim())
}
$allowed = @('S-1-5-32-544', 'S-1-5-18')
# Explicit grants to anyone else (added by hand) survive /inheritance:r.
$acl = Get-Acl -LiteralPath $path
# Rules are read as SIDs directly: translating account names back to SIDs
# throws for some built-in names (APPLICATION PACKAGE AUTHORITY\...).
$sidType = [System.Security.Principal.SecurityIdentifier]
foreach ($sid in @($acl.GetAccessRules($true, $true, $sidType) | ForEach-Object { $_.IdentityReference.Value } | Sort-Object -Unique)) {
    if ($allowed -notcontains $sid) { [void](& { $ErrorActionPreference = 'Continue'; & $icacls $path /remove ('*' + $sid) 2>&1 }) }
}
$acl = Get-Acl -LiteralPath $path
$sids = @($acl.GetAccessRules($true, $true, $sidType) | ForEach-Object { $_.IdentityReference.Value })
$aclOk = $acl.AreAccessRulesProtected -and (@($sids | Where-Object { $allowed -notcontains $_ }).Count -eq 0)
$keys = @($present | Where-Object { -not $_.StartsWith('#') })
Write-SwdtResult -Data ([ordered]@{ exists = $true; keys = $keys; aclOk = [bool]$aclOk; added = $added })
