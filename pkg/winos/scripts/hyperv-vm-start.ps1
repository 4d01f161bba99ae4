# script: hyperv-vm-start
# language: constrained
# Starts a VM that is off or saved, resumes a paused one, and leaves a
# running one alone.
# Runs after request-prelude.ps1 and hyperv-prelude.ps1 (request in $request). Request: {"name"}.
# Result: data {alreadyRunning}.
$vm = Get-SwdtVM -Name ([string]$request.name)
$alreadyRunning = ($vm.State -eq 'Running')
if ($vm.State -eq 'Paused') {
    $vm | Hyper-V\Resume-VM
} elseif (-not $alreadyRunning) {
    $vm | Hyper-V\Start-VM
}
Write-SwdtResult -Data ([ordered]@{ alreadyRunning = [bool]$alreadyRunning })
