# Runs once, at the first logon of a freshly installed image
# (FirstLogonCommands of autounattend-*.xml), from the answer-file CD:
# installs and enables OpenSSH Server with its firewall rule and installs
# the builder's public key for Administrators, as swdt needs.
param(
    [Parameter(Mandatory = $true)] [string] $KeyFile
)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
Start-Transcript -Path 'C:\Windows\Temp\swdt-setup-ssh.log'

# OpenSSH Server is a Feature on Demand that Windows Update delivers: the
# VM needs internet access here.
$capability = Get-WindowsCapability -Online | Where-Object { $_.Name -like 'OpenSSH.Server*' } | Select-Object -First 1
if ($capability.State -ne 'Installed') {
    Add-WindowsCapability -Online -Name $capability.Name | Out-Null
}
Set-Service -Name sshd -StartupType Automatic
# The first start creates C:\ProgramData\ssh and the host keys.
Start-Service -Name sshd

if (Get-NetFirewallRule -Name 'OpenSSH-Server-In-TCP' -ErrorAction SilentlyContinue) {
    Enable-NetFirewallRule -Name 'OpenSSH-Server-In-TCP'
} else {
    New-NetFirewallRule -Name 'OpenSSH-Server-In-TCP' -DisplayName 'OpenSSH Server (sshd)' -Enabled True -Direction Inbound -Protocol TCP -Action Allow -LocalPort 22 | Out-Null
}

# sshd reads the keys of Administrators only from this file, and only when
# its ACL grants nothing but Administrators and SYSTEM; otherwise key login
# quietly falls through to the next method.
$keys = 'C:\ProgramData\ssh\administrators_authorized_keys'
$key = (Get-Content -Raw -Path $KeyFile).Trim()
[System.IO.File]::WriteAllText($keys, $key + "`r`n", (New-Object System.Text.UTF8Encoding $false))
icacls.exe $keys /inheritance:r /grant 'Administrators:F' /grant 'SYSTEM:F'
if ($LASTEXITCODE -ne 0) {
    throw "icacls $keys failed with exit code $LASTEXITCODE"
}

# swdt runs the same command line under cmd.exe or PowerShell; PowerShell
# is what people expect when they ssh in themselves.
New-ItemProperty -Path 'HKLM:\SOFTWARE\OpenSSH' -Name DefaultShell -Value 'C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe' -PropertyType String -Force | Out-Null
Restart-Service -Name sshd

# Windows Setup keeps the answer file, with the Administrator password in
# clear text.
foreach ($copy in @('C:\Windows\Panther\unattend.xml', 'C:\Windows\Panther\Unattend\unattend.xml')) {
    if (Test-Path -LiteralPath $copy) {
        Remove-Item -LiteralPath $copy -Force
    }
}
Stop-Transcript
