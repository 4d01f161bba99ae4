# script: hyperv-checkpoint-list
# language: constrained
# Lists a VM's checkpoints, oldest first, and the one its state descends
# from.
# Runs after request-prelude.ps1 and hyperv-prelude.ps1 (request in $request). Request: {"name"}.
# Result: data {current, checkpoints: [{name, created, parent}]}.
$vm = Get-SwdtVM -Name ([string]$request.name)
$list = @($vm | Get-VMCheckpoint | Sort-Object -Property CreationTime | ForEach-Object { ConvertTo-SwdtCheckpoint -Checkpoint $_ })
Write-SwdtResult -Data ([ordered]@{ current = [string]$vm.ParentSnapshotName; checkpoints = $list })
