# prelude of the hyperv-* scripts: pkg/winos puts this fixed text before
# each of them (Script.Source), after request-prelude.ps1 (the request is
# in $request, Write-SwdtJson prints JSON, Stop-SwdtOp and its trap report
# failures). It reports the result, checks for the Hyper-V module and
# finds VMs and checkpoints by name. Like request-prelude.ps1 it uses core
# types only, so that it runs in Constrained Language mode.
#
# VM and checkpoint names are user data: they stay data, compared with
# -eq (Get-VM -Name and friends read [ ] * ? as wildcards), and never
# become script text.
#
# Output: one line of JSON on stdout, {"data": ...} (exit 0), or
# request-prelude.ps1's failure line (exit 1) for a failure the script
# names (Stop-SwdtOp: no-hyperv, vm-not-found, ...) or any other
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

