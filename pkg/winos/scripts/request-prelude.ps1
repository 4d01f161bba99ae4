# prelude of the scripts that take a request: pkg/winos puts this fixed
# text before each of them (Script.Source). It reads the request into
# $request and defines Write-SwdtJson.
#
# Everything here runs in Constrained Language mode (a node under WDAC or
# AppLocker), which allows core types only: no [Console], no
# IO.StreamReader, no New-Object of another type (about_Language_Modes).
#
# Input: the request as one line of JSON on stdin. powershell.exe, run
# with -EncodedCommand and a redirected stdin, reads stdin itself and
# hands its lines to the command as pipeline input, which the command
# reads as $input (about_Automatic_Variables); it does so only for a
# command that uses $input outside its functions, hence here, at the top.
# The console's input code page decodes it; the agent escapes every
# non-ASCII character of the request (\uXXXX), so no code page can alter
# it.
#
# Output: Write-SwdtJson prints one line of JSON with every non-ASCII
# character escaped, since powershell.exe encodes what it prints with the
# console's output code page, not UTF-8.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
$request = (@($input) -join "`n") | ConvertFrom-Json

function Write-SwdtJson {
    param([Parameter(Mandatory = $true)] [AllowNull()] [AllowEmptyCollection()] $Object, [int] $Depth = 20)
    $json = ConvertTo-Json -InputObject $Object -Compress -Depth $Depth
    $chars = foreach ($c in $json.ToCharArray()) {
        if ([int]$c -gt 126) { '\u' + ([int]$c).ToString('x4') } else { [string]$c }
    }
    -join $chars
}

