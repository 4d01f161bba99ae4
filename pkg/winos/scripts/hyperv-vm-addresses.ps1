# script: hyperv-vm-addresses
# language: constrained
# Lists a VM's network adapters with the IP addresses the guest's
# integration services report (none until the guest has booted).
# Runs after request-prelude.ps1 and hyperv-prelude.ps1 (request in $request). Request: {"name"}.
# Result: data {adapters: [{name, mac, addresses}]}.
$vm = Get-SwdtVM -Name ([string]$request.name)
$adapters = @($vm | Hyper-V\Get-VMNetworkAdapter | ForEach-Object {
    $adapter = $_
    [ordered]@{
        name      = [string]$adapter.Name
        mac       = [string]$adapter.MacAddress
        addresses = @($adapter.IPAddresses | Where-Object { $null -ne $_ } | ForEach-Object { [string]$_ })
    }
})
Write-SwdtResult -Data ([ordered]@{ adapters = $adapters })
