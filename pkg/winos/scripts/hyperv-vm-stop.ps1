# script: hyperv-vm-stop
# language: constrained
# Shuts a VM down through the guest's shutdown integration service and,
# when it is not off within timeoutSeconds (or the guest cannot be asked),
# turns it off. -Force skips the prompt Stop-VM shows for a locked guest.
# Runs after request-prelude.ps1 and hyperv-prelude.ps1 (request in $request). Request: {"name","timeoutSeconds"}.
# Result: data {forced, alreadyOff}.
$vm = Get-SwdtVM -Name ([string]$request.name)
$alreadyOff = ($vm.State -eq 'Off')
$forced = $false
if (-not $alreadyOff) {
    $job = $vm | Hyper-V\Stop-VM -Force -AsJob
    $finished = Wait-Job -Job $job -Timeout ([int]$request.timeoutSeconds)
    $vm = Hyper-V\Get-VM -Id $vm.Id
    if ($null -eq $finished -or $vm.State -ne 'Off') {
        Stop-Job -Job $job
        $vm | Hyper-V\Stop-VM -TurnOff -Force
        $forced = $true
    }
    Remove-Job -Job $job -Force
}
Write-SwdtResult -Data ([ordered]@{ forced = [bool]$forced; alreadyOff = [bool]$alreadyOff })
