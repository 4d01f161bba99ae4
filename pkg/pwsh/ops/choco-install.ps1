# op: choco-install
# Installs Chocolatey with the community install script. The download and
# the install are separate steps so that a node without internet access is
# reported as such ('download-failed') with the node's own error.
$chocoExe = Join-Path $env:ProgramData 'chocolatey\choco.exe'
if (-not (Test-Path -LiteralPath $chocoExe -PathType Leaf)) {
    [Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
    try {
        $installer = (New-Object System.Net.WebClient).DownloadString('https://community.chocolatey.org/install.ps1')
    } catch {
        Stop-SwdtOp -Kind 'download-failed' -Message ("the node could not download the Chocolatey install script from https://community.chocolatey.org/install.ps1: " + $_.Exception.Message + " (does the node have internet access or a proxy?)")
    }
    # The process already runs with -ExecutionPolicy Bypass; a Group Policy
    # execution policy makes this throw, which must not end the op.
    try { Set-ExecutionPolicy -ExecutionPolicy Bypass -Scope Process -Force } catch { $null = $_ }
    # The script's own non-terminating errors and native stderr must not
    # stop it under 'Stop': success is judged by choco.exe existing. A
    # throw from it is caught and reported the same way.
    $log = ''
    try {
        $log = & { $ErrorActionPreference = 'Continue'; & ([scriptblock]::Create($installer)) *>&1 } | Out-String
    } catch {
        $log = $log + $_.Exception.Message
    }
    if (-not (Test-Path -LiteralPath $chocoExe -PathType Leaf)) {
        if ($log.Length -gt 1500) { $log = $log.Substring($log.Length - 1500) }
        Stop-SwdtOp -Kind 'install-failed' -Message ("the Chocolatey install script ran but " + $chocoExe + " does not exist: " + $log.Trim())
    }
}
$version = ([string](& { $ErrorActionPreference = 'Continue'; & $chocoExe --version 2>$null } | Select-Object -First 1)).Trim()
Write-SwdtResult -Data ([ordered]@{ installed = $true; version = $version; packages = @() })
