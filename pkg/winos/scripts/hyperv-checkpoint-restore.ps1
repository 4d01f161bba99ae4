# script: hyperv-checkpoint-restore
# language: constrained
# Applies a VM's checkpoint and reports the VM afterwards: a standard
# checkpoint of a running VM comes back running, a production one off.
# Runs after request-prelude.ps1 and hyperv-prelude.ps1 (request in $request). Request: {"name","checkpoint"}.
# Result: data {name, state, checkpoints, currentCheckpoint}.
$vm = Get-SwdtVM -Name ([string]$request.name)
$name = [string]$request.checkpoint
$found = Get-SwdtCheckpoint -VM $vm -Name $name
if ($found.Count -eq 0) {
    Stop-SwdtOp -Kind 'checkpoint-not-found' -Message ('VM "' + $vm.Name + '" has no checkpoint named "' + $name + '"')
}
if ($found.Count -gt 1) {
    Stop-SwdtOp -Kind 'ambiguous' -Message ([string]$found.Count + ' checkpoints of VM "' + $vm.Name + '" are named "' + $name + '": rename all but one (Rename-VMCheckpoint)')
}
$found[0] | Restore-VMCheckpoint -Confirm:$false
Write-SwdtResult -Data (ConvertTo-SwdtVMInfo -VM (Hyper-V\Get-VM -Id $vm.Id))
