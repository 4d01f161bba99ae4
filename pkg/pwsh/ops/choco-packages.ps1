# op: choco-packages
# Installs each package with choco.exe by full path (sessions keep sshd's
# PATH from before Chocolatey was installed). Exit codes 0, 1641 and 3010
# are success; the last two mean a reboot is required. One package failing
# does not stop the others.
$chocoExe = Join-Path $env:ProgramData 'chocolatey\choco.exe'
if (-not (Test-Path -LiteralPath $chocoExe -PathType Leaf)) {
    Stop-SwdtOp -Kind 'not-found' -Message ("Chocolatey is not installed (" + $chocoExe + " is missing)")
}
# 5.1 turns a native command's redirected stderr into a terminating error
# under 'Stop': choco runs in child scopes with the preference relaxed.
$version = ([string](& { $ErrorActionPreference = 'Continue'; & $chocoExe --version 2>$null } | Select-Object -First 1)).Trim()
# v1's `list` searches the feed unless told --local-only; v2 rejects it.
$listArgs = @('list', '--limit-output', '--exact')
if ($version -match '^[01]\.') { $listArgs += '--local-only' }
$results = foreach ($name in @($SwdtParams.packages | Where-Object { $null -ne $_ })) {
    $output = (& { $ErrorActionPreference = 'Continue'; & $chocoExe install ([string]$name) -y --no-progress --limit-output 2>&1 } | ForEach-Object { [string]$_ }) -join "`r`n"
    $code = $LASTEXITCODE
    $result = [ordered]@{ name = [string]$name; result = 'failed'; exitCode = $code; rebootRequired = ($code -eq 1641 -or $code -eq 3010); version = ''; output = '' }
    if (@(0, 1641, 3010) -contains $code) {
        $result.result = 'installed'
        $listed = & { $ErrorActionPreference = 'Continue'; & $chocoExe @listArgs ([string]$name) 2>$null } | Select-Object -First 1
        if ($listed -and ([string]$listed).Contains('|')) { $result.version = ([string]$listed).Split('|')[1] }
    } else {
        if ($output -match 'not found with the source|was not found|could not be found') { $result.result = 'not-found' }
        $tail = $output.Trim()
        if ($tail.Length -gt 800) { $tail = $tail.Substring($tail.Length - 800) }
        $result.output = $tail
    }
    $result
}
Write-SwdtResult -Data ([ordered]@{ results = @($results) })
