# prelude of the scripts that take a request: pkg/winos puts this fixed
# text before each of them (Script.Source). It reads the request into
# $request and defines Write-SwdtJson, Stop-SwdtOp and the trap that
# reports failures.
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
#
# Failures: every terminating error (with $ErrorActionPreference Stop,
# every error) ends the script with exit code 1 and one line on stdout,
# {"error": {"kind": "...", "message": "..."}}: a named failure
# (Stop-SwdtOp) or kind exception. powershell.exe would otherwise write
# the error to stderr as CLIXML (an XML serialization) when its output is
# redirected, which no user should have to read.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'

function Write-SwdtJson {
    param([Parameter(Mandatory = $true)] [AllowNull()] [AllowEmptyCollection()] $Object, [int] $Depth = 20)
    $json = ConvertTo-Json -InputObject $Object -Compress -Depth $Depth
    $chars = foreach ($c in $json.ToCharArray()) {
        if ([int]$c -gt 126) { '\u' + ([int]$c).ToString('x4') } else { [string]$c }
    }
    -join $chars
}


# Stop-SwdtOp ends the script with a failure of its kind: the kind and
# message are kept in a variable of the script's scope for the trap (an
# exception of another type, to carry them, is not a core type).
$SwdtFailure = $null
function Stop-SwdtOp {
    param([Parameter(Mandatory = $true)] [string] $Kind, [Parameter(Mandatory = $true)] [AllowEmptyString()] [string] $Message)
    $script:SwdtFailure = [ordered]@{ kind = $Kind; message = $Message }
    throw $Message
}

# A trap applies to its whole scope, so a request that is no JSON is
# reported too.
trap {
    $failure = $script:SwdtFailure
    if ($null -eq $failure) {
        $message = [string]$_.Exception.Message
        if ($_.InvocationInfo) {
            $message = $message + ' (at line ' + $_.InvocationInfo.ScriptLineNumber + ')'
        }
        $failure = [ordered]@{ kind = 'exception'; message = $message }
    }
    Write-SwdtJson -Object ([ordered]@{ error = $failure })
    exit 1
}

$request = (@($input) -join "`n") | ConvertFrom-Json
