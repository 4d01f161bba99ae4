# prelude of the hyperv-* scripts: pkg/winos puts this fixed text before
# each of them (Script.Source). It reads the op's request, reports the
# result or a typed failure, checks for the Hyper-V module and finds VMs
# and checkpoints by name.
#
# Input on stdin: the op's request as JSON. VM and checkpoint names are
# user data: they stay data, compared with -eq (Get-VM -Name and friends
# read [ ] * ? as wildcards), and never become script text.
#
# Output: one line of JSON on stdout, {"data": ...} (exit 0), or
# {"error": {"kind": "...", "message": "..."}} (exit 1) for a failure the
# script names (Stop-SwdtOp: no-hyperv, vm-not-found, ...) or any other
# terminating error (kind exception).
#
# Windows PowerShell 5.1: its type data gives System.Array a Count alias
# property, so ConvertTo-Json writes a nested array as
# {"value":[...],"Count":n} unless that type data is removed (absent in
# 7.x, hence the try); ConvertTo-Json turns anything deeper than -Depth
# into its ToString(), so results are hashtables, arrays and scalars only,
# with a generous depth; the line is written as UTF-8 bytes whatever the
# console's code page.
#
# Get-VM, Start-VM, Stop-VM, Resume-VM and Get-VMNetworkAdapter are
# module-qualified: VMware PowerCLI has cmdlets of the same names.
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
try {
    Remove-TypeData -TypeName System.Array -ErrorAction Stop
} catch {
    $null = $_
}

function Write-SwdtJson {
    param([Parameter(Mandatory = $true)] $Object)
    $line = (ConvertTo-Json -InputObject $Object -Compress -Depth 20) + [char]13 + [char]10
    $bytes = (New-Object System.Text.UTF8Encoding $false).GetBytes($line)
    [Console]::Out.Flush()
    $stdout = [Console]::OpenStandardOutput()
    $stdout.Write($bytes, 0, $bytes.Length)
    $stdout.Flush()
}

function Write-SwdtResult {
    param([Parameter(Mandatory = $true)] [AllowNull()] [AllowEmptyCollection()] $Data)
    Write-SwdtJson -Object ([ordered]@{ data = $Data })
}

function Stop-SwdtOp {
    param([Parameter(Mandatory = $true)] [string] $Kind, [Parameter(Mandatory = $true)] [AllowEmptyString()] [string] $Message)
    $exception = New-Object System.Exception $Message
    $exception.Data['swdtKind'] = $Kind
    throw $exception
}

# Every terminating error ends the script with one failure line. The kind
# set by Stop-SwdtOp is looked for along the InnerException chain: an
# exception thrown in a script block .NET invokes arrives wrapped.
trap {
    $kind = 'exception'
    $message = $_.Exception.Message
    for ($e = $_.Exception; $null -ne $e; $e = $e.InnerException) {
        if ($e.Data['swdtKind']) {
            $kind = [string]$e.Data['swdtKind']
            $message = $e.Message
            break
        }
    }
    if ($kind -eq 'exception' -and $_.InvocationInfo) {
        $message = $message + ' (at line ' + $_.InvocationInfo.ScriptLineNumber + ')'
    }
    Write-SwdtJson -Object ([ordered]@{ error = [ordered]@{ kind = $kind; message = [string]$message } })
    exit 1
}

$reader = New-Object System.IO.StreamReader([Console]::OpenStandardInput(), (New-Object System.Text.UTF8Encoding($false)))
$request = $reader.ReadToEnd() | ConvertFrom-Json

if ($null -eq (Get-Module -ListAvailable -Name Hyper-V)) {
    Stop-SwdtOp -Kind 'no-hyperv' -Message ('the Hyper-V PowerShell module is not installed on ' + [Environment]::MachineName + ': install Hyper-V with its management tools (Install-WindowsFeature Hyper-V -IncludeManagementTools), or point spec.vm.hyperv.host at a Hyper-V host')
}
Import-Module -Name Hyper-V

function Get-SwdtVM {
    param([Parameter(Mandatory = $true)] [AllowEmptyString()] [string] $Name)
    $found = @(Hyper-V\Get-VM | Where-Object { $_.Name -eq $Name })
    if ($found.Count -eq 0) {
        Stop-SwdtOp -Kind 'vm-not-found' -Message ('no VM named "' + $Name + '" on ' + [Environment]::MachineName)
    }
    if ($found.Count -gt 1) {
        Stop-SwdtOp -Kind 'ambiguous' -Message ([string]$found.Count + ' VMs are named "' + $Name + '" on ' + [Environment]::MachineName + ': rename all but one (Rename-VM)')
    }
    $found[0]
}

function Get-SwdtCheckpoint {
    param([Parameter(Mandatory = $true)] $VM, [Parameter(Mandatory = $true)] [AllowEmptyString()] [string] $Name)
    @($VM | Get-VMCheckpoint | Where-Object { $_.Name -eq $Name })
}

function ConvertTo-SwdtCheckpoint {
    param([Parameter(Mandatory = $true)] $Checkpoint)
    [ordered]@{
        name    = [string]$Checkpoint.Name
        created = $Checkpoint.CreationTime.ToUniversalTime().ToString('o')
        parent  = [string]$Checkpoint.ParentSnapshotName
    }
}

function ConvertTo-SwdtVMInfo {
    param([Parameter(Mandatory = $true)] $VM)
    [ordered]@{
        name              = [string]$VM.Name
        state             = [string]$VM.State
        checkpoints       = @($VM | Get-VMCheckpoint).Count
        currentCheckpoint = [string]$VM.ParentSnapshotName
    }
}

