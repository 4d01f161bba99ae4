# script: choco-install
# language: full
# Runs Chocolatey's community install script the way its documentation
# does. The script's address is fixed; no parameter is read. It needs
# FullLanguage (.NET types, and the install script's own): the agent
# refuses with kind constrained-language before running it on a node
# under WDAC or AppLocker.
#
# The install script and its modules read the session's global error
# preference and expect PowerShell's default, Continue: it is set to that
# explicitly (never Stop), whatever the host's default.
#
# Exit codes, for the agent: 2 the download failed (the error on stderr);
# 3 the installer threw (its message on stderr; Chocolatey 2 throws after
# installing .NET Framework 4.8, which needs a reboot); 0 it ran to its
# end. Success is judged by choco.exe existing, not by the exit code.
$ErrorActionPreference = 'Continue'
$ProgressPreference = 'SilentlyContinue'
# A Group Policy execution policy makes this throw; the process already
# runs with -ExecutionPolicy Bypass, so that must not end the install.
try { Set-ExecutionPolicy Bypass -Scope Process -Force } catch { $null = $_ }
[System.Net.ServicePointManager]::SecurityProtocol = [System.Net.ServicePointManager]::SecurityProtocol -bor 3072
try {
    $installer = (New-Object System.Net.WebClient).DownloadString('https://community.chocolatey.org/install.ps1')
} catch {
    [Console]::Error.WriteLine($_.Exception.Message)
    exit 2
}
try {
    Invoke-Expression $installer
} catch {
    [Console]::Error.WriteLine($_.Exception.Message)
    exit 3
}
exit 0
