# Common to every Hyper-V op: the module check and the one way to find a
# VM and its checkpoints by name. Get-VM -Name and friends read [ ] * ? as
# wildcards, and names are user data, so names are compared with -eq.
# Get-VM, Start-VM and Stop-VM are module-qualified: VMware PowerCLI has
# cmdlets of the same names.
if ($null -eq (Get-Module -ListAvailable -Name Hyper-V)) {
    Stop-SwdtOp -Kind 'no-hyperv' -Message ('the Hyper-V PowerShell module is not installed on ' + [Environment]::MachineName + ': install Hyper-V with its management tools (Install-WindowsFeature Hyper-V -IncludeManagementTools), or point spec.vm.hyperv.host at a Hyper-V host')
}
Import-Module -Name Hyper-V

function Get-SwdtVM {
    param([Parameter(Mandatory = $true)] [string] $Name)
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
    param([Parameter(Mandatory = $true)] $VM, [Parameter(Mandatory = $true)] [string] $Name)
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

