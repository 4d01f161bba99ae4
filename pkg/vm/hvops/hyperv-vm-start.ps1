# op: hyperv-vm-start
# Starts a VM that is off or saved, resumes a paused one, and leaves a
# running one alone.
$vm = Get-SwdtVM -Name ([string]$SwdtParams.name)
$alreadyRunning = ($vm.State -eq 'Running')
if ($vm.State -eq 'Paused') {
    $vm | Hyper-V\Resume-VM
} elseif (-not $alreadyRunning) {
    $vm | Hyper-V\Start-VM
}
Write-SwdtResult -Data ([ordered]@{ alreadyRunning = [bool]$alreadyRunning })
