# op: wins-inspect
# Reads the rancher-wins service, wins' config file and the rancher-wins-*
# processes wins started on the host (they lock their binaries).
Add-Type -AssemblyName System.ServiceProcess
$name = 'rancher-wins'
$service = [ordered]@{ name = $name; exists = $false; dependsOn = @(); dependents = @() }
$sc = [System.ServiceProcess.ServiceController]::GetServices() | Where-Object { $_.ServiceName -eq $name }
if ($null -ne $sc) {
    $cim = Get-CimInstance -ClassName Win32_Service | Where-Object { $_.Name -eq $name }
    $startTypes = @{ Auto = 'Automatic'; Manual = 'Manual'; Disabled = 'Disabled' }
    $service.exists = $true
    $service.status = $sc.Status.ToString()
    $service.startType = $startTypes[[string]$cim.StartMode]
    $service.pid = [int]$cim.ProcessId
    $service.binaryPath = [string]$cim.PathName
    $service.dependsOn = @($sc.ServicesDependedOn | ForEach-Object { $_.ServiceName })
    $service.dependents = @($sc.DependentServices | ForEach-Object { $_.ServiceName })
}
$config = [string]$SwdtParams.configPath
$exists = Test-Path -LiteralPath $config -PathType Leaf
$content = ''
# The exact text, BOM included (ReadAllText drops it), so that swdt sees a
# file with a BOM as different from the config it renders.
if ($exists) { $content = (New-Object System.Text.UTF8Encoding $false).GetString([System.IO.File]::ReadAllBytes($config)) }
$orphans = @(Get-CimInstance -ClassName Win32_Process -Filter "Name LIKE 'rancher-wins-%'" | ForEach-Object {
    [ordered]@{ pid = [int]$_.ProcessId; name = [string]$_.Name; path = [string]$_.ExecutablePath; commandLine = [string]$_.CommandLine }
})
Write-SwdtResult -Data ([ordered]@{ service = $service; configExists = $exists; configContent = $content; orphans = $orphans })
