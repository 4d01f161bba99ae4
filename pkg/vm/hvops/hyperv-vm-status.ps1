# op: hyperv-vm-status
# Reports a VM's state, how many checkpoints it has and which one its
# state descends from.
$vm = Get-SwdtVM -Name ([string]$SwdtParams.name)
Write-SwdtResult -Data (ConvertTo-SwdtVMInfo -VM $vm)
