# prelude of the hyperv-* scripts: pkg/winos puts this fixed text before
# each of them (Script.Source), after request-prelude.ps1 (the request is
# in $request, Write-SwdtJson prints JSON). It reports the result or a
# typed failure, checks for the Hyper-V module and finds VMs and
# checkpoints by name. Like request-prelude.ps1 it uses core types only,
# so that it runs in Constrained Language mode.
#
# VM and checkpoint names are user data: they stay data, compared with
# -eq (Get-VM -Name and friends read [ ] * ? as wildcards), and never
# become script text.
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
# with a generous depth.
#
# Get-VM, Start-VM, Stop-VM, Resume-VM and Get-VMNetworkAdapter are
# module-qualified: VMware PowerCLI has cmdlets of the same names.
try {
    Remove-TypeData -TypeName System.Array -ErrorAction Stop
} catch {
    $null = $_
}

function Write-SwdtResult {
    param([Parameter(Mandatory = $true)] [AllowNull()] [AllowEmptyCollection()] $Data)
    Write-SwdtJson -Object ([ordered]@{ data = $Data })
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

# Every terminating error ends the script with one failure line (a trap
# applies to its whole scope, so a request that is no JSON is reported
# too).
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

if ($null -eq (Get-Module -ListAvailable -Name Hyper-V)) {
    Stop-SwdtOp -Kind 'no-hyperv' -Message ('the Hyper-V PowerShell module is not installed on ' + $env:COMPUTERNAME + ': install Hyper-V with its management tools (Install-WindowsFeature Hyper-V -IncludeManagementTools), or point spec.vm.hyperv.host at a Hyper-V host')
}
Import-Module -Name Hyper-V

function Get-SwdtVM {
    param([Parameter(Mandatory = $true)] [AllowEmptyString()] [string] $Name)
    $found = @(Hyper-V\Get-VM | Where-Object { $_.Name -eq $Name })
    if ($found.Count -eq 0) {
        Stop-SwdtOp -Kind 'vm-not-found' -Message ('no VM named "' + $Name + '" on ' + $env:COMPUTERNAME)
    }
    if ($found.Count -gt 1) {
        Stop-SwdtOp -Kind 'ambiguous' -Message ([string]$found.Count + ' VMs are named "' + $Name + '" on ' + $env:COMPUTERNAME + ': rename all but one (Rename-VM)')
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

