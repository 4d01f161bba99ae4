# op: files-remove
# Deletes leftover files such as staged uploads after a failed run. Missing
# files are skipped; a file that cannot be deleted is an error.
$removed = New-Object System.Collections.ArrayList
foreach ($path in @($SwdtParams.paths | Where-Object { $null -ne $_ })) {
    if (Test-Path -LiteralPath $path -PathType Leaf) {
        Remove-Item -LiteralPath $path -Force
        [void]$removed.Add([string]$path)
    }
}
Write-SwdtResult -Data ([ordered]@{ removed = $removed.ToArray() })
