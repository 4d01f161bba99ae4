# swdt: the file calls of the Kubernetes API transport (pkg/kubeconn), one per run.
# language: full
# The request is one JSON line on stdin ({"op","path","to","offset"}); a write's bytes
# follow it to EOF. The reply is one JSON line on stdout; a read's bytes follow it.
$ErrorActionPreference = 'Stop'
$in = [Console]::OpenStandardInput()
$out = [Console]::OpenStandardOutput()
$line = New-Object System.IO.MemoryStream
while ($true) {
    $b = $in.ReadByte()
    if ($b -lt 0 -or $b -eq 10) { break }
    $line.WriteByte([byte]$b)
}
function Send-Reply($reply) {
    $text = ConvertTo-Json -InputObject $reply -Compress -Depth 4
    $bytes = [System.Text.Encoding]::UTF8.GetBytes($text + "`n")
    $out.Write($bytes, 0, $bytes.Length)
    $out.Flush()
}
function Get-Entry($item) {
    $dir = [bool]($item.Attributes -band [System.IO.FileAttributes]::Directory)
    $size = 0
    if (-not $dir) { $size = $item.Length }
    $mod = ($item.LastWriteTimeUtc.Ticks - 621355968000000000) * 100
    return @{ name = $item.Name; dir = $dir; size = $size; mod = $mod }
}
function Get-Item1($p) {
    if ([System.IO.Directory]::Exists($p)) { return New-Object System.IO.DirectoryInfo $p }
    if ([System.IO.File]::Exists($p)) { return New-Object System.IO.FileInfo $p }
    return $null
}
try {
    $req = ConvertFrom-Json -InputObject ([System.Text.Encoding]::UTF8.GetString($line.ToArray()))
    $p = [string]$req.path
    $item = Get-Item1 $p
    if ($req.op -ne 'write' -and $req.op -ne 'mkdir' -and $null -eq $item) {
        Send-Reply @{ ok = $false; kind = 'not-found'; message = "$p does not exist" }
        exit 1
    }
    switch ($req.op) {
        'stat' { Send-Reply @{ ok = $true; entries = @(Get-Entry $item) } }
        'readdir' {
            $entries = @()
            foreach ($e in $item.GetFileSystemInfos()) { $entries += Get-Entry $e }
            Send-Reply @{ ok = $true; entries = $entries }
        }
        'remove' {
            if ($item -is [System.IO.DirectoryInfo]) { $item.Delete() } else { [System.IO.File]::Delete($p) }
            Send-Reply @{ ok = $true }
        }
        'mkdir' {
            [void][System.IO.Directory]::CreateDirectory($p)
            Send-Reply @{ ok = $true }
        }
        'write' {
            $f = [System.IO.File]::Create($p)
            try { $in.CopyTo($f) } finally { $f.Close() }
            $to = [string]$req.to
            if ($to -ne '') {
                if ([System.IO.File]::Exists($to)) { [System.IO.File]::Delete($to) }
                [System.IO.File]::Move($p, $to)
            }
            Send-Reply @{ ok = $true }
        }
        'read' {
            $f = [System.IO.File]::OpenRead($p)
            try {
                if ($null -ne $req.offset) { [void]$f.Seek([long]$req.offset, [System.IO.SeekOrigin]::Begin) }
                Send-Reply @{ ok = $true; entries = @(Get-Entry $item) }
                $f.CopyTo($out)
                $out.Flush()
            } finally { $f.Close() }
        }
        default {
            Send-Reply @{ ok = $false; kind = 'bad-request'; message = "unknown file call $($req.op)" }
            exit 1
        }
    }
} catch [System.UnauthorizedAccessException] {
    Send-Reply @{ ok = $false; kind = 'access-denied'; message = $_.Exception.Message }
    exit 1
} catch [System.IO.FileNotFoundException], [System.IO.DirectoryNotFoundException] {
    Send-Reply @{ ok = $false; kind = 'not-found'; message = $_.Exception.Message }
    exit 1
} catch {
    Send-Reply @{ ok = $false; kind = 'io'; message = $_.Exception.Message }
    exit 1
}
