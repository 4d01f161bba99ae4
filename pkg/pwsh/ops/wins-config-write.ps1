# op: wins-config-write
# Writes wins' config file only when its content differs, keeping the
# previous file as <config>.swdt-bak. The new content is written beside the
# file and renamed into place so a reader never sees half a file.
$path = [string]$SwdtParams.path
$content = [string]$SwdtParams.content
$utf8 = New-Object System.Text.UTF8Encoding $false
$exists = Test-Path -LiteralPath $path -PathType Leaf
# No early return: the body runs inside the epilogue's try, and leaving it
# with return skips the epilogue's exit 0 (the exit code then depends on
# whatever ran last).
# Compared as bytes decoded without BOM detection (ReadAllText would drop
# a BOM and call a file with one unchanged).
if ($exists -and $utf8.GetString([System.IO.File]::ReadAllBytes($path)) -ceq $content) {
    Write-SwdtResult -Data ([ordered]@{ changed = $false; backup = '' })
} else {
    $backup = ''
    if ($exists) {
        $backup = $path + '.swdt-bak'
        [System.IO.File]::Copy([string]$path, [string]$backup, $true)
    }
    $dir = Split-Path -Path $path -Parent
    if (-not (Test-Path -LiteralPath $dir)) { [void](New-Item -ItemType Directory -Path $dir -Force) }
    $staged = $path + '.swdt-new'
    [System.IO.File]::WriteAllText($staged, $content, $utf8)
    # Replace swaps the file in one step; Move refuses an existing target.
    if ([System.IO.File]::Exists($path)) { [System.IO.File]::Replace($staged, $path, [NullString]::Value) } else { [System.IO.File]::Move($staged, $path) }
    Write-SwdtResult -Data ([ordered]@{ changed = $true; backup = $backup })
}
