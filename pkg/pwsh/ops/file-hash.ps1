# op: file-hash
# Hashes files on the node, for example a staged upload before it is swapped
# into place. A missing file is reported, not an error.
$files = New-Object System.Collections.ArrayList
foreach ($path in @($SwdtParams.paths | Where-Object { $null -ne $_ })) {
    $facts = [ordered]@{ path = [string]$path; exists = $false; size = 0; sha256 = ''; modTicks = 0 }
    if (Test-Path -LiteralPath $path -PathType Leaf) {
        $item = Get-Item -LiteralPath $path
        $facts.exists = $true
        $facts.size = [int64]$item.Length
        $facts.modTicks = [int64]$item.LastWriteTimeUtc.Ticks
        $facts.sha256 = (Get-FileHash -LiteralPath $path -Algorithm SHA256).Hash.ToLowerInvariant()
    }
    [void]$files.Add($facts)
}
Write-SwdtResult -Data ([ordered]@{ files = $files.ToArray() })
