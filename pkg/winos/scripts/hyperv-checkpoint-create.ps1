# script: hyperv-checkpoint-create
# language: constrained
# Takes a checkpoint of a VM under a name no other checkpoint of it has
# (Hyper-V itself allows duplicates, which would make a revert ambiguous).
# Runs after request-prelude.ps1 and hyperv-prelude.ps1 (request in $request). Request: {"name","checkpoint"}.
# Result: data {name, created, parent}.
$vm = Get-SwdtVM -Name ([string]$request.name)
$name = [string]$request.checkpoint
if ((Get-SwdtCheckpoint -VM $vm -Name $name).Count -gt 0) {
    Stop-SwdtOp -Kind 'checkpoint-exists' -Message ('VM "' + $vm.Name + '" already has a checkpoint named "' + $name + '"')
}
$vm | Checkpoint-VM -SnapshotName $name
$created = Get-SwdtCheckpoint -VM $vm -Name $name
Write-SwdtResult -Data (ConvertTo-SwdtCheckpoint -Checkpoint $created[0])
