# op: hyperv-checkpoint-list
# Lists a VM's checkpoints, oldest first, and the one its state descends
# from.
$vm = Get-SwdtVM -Name ([string]$SwdtParams.name)
$list = @($vm | Get-VMCheckpoint | Sort-Object -Property CreationTime | ForEach-Object { ConvertTo-SwdtCheckpoint -Checkpoint $_ })
Write-SwdtResult -Data ([ordered]@{ current = [string]$vm.ParentSnapshotName; checkpoints = $list })
