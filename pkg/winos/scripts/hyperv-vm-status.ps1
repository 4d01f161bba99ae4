# script: hyperv-vm-status
# language: constrained
# Reports a VM's state, how many checkpoints it has and which one its
# state descends from.
# Runs after request-prelude.ps1 and hyperv-prelude.ps1 (request in $request). Request: {"name"}.
# Result: data {name, state, checkpoints, currentCheckpoint}.
$vm = Get-SwdtVM -Name ([string]$request.name)
Write-SwdtResult -Data (ConvertTo-SwdtVMInfo -VM $vm)
