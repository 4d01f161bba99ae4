# op: node-facts
# Reports the node's OS version and build, its hostname, the account this
# session runs as and whether that account holds Administrator rights.
$cv = Get-ItemProperty -Path 'HKLM:\SOFTWARE\Microsoft\Windows NT\CurrentVersion'
$identity = [System.Security.Principal.WindowsIdentity]::GetCurrent()
$principal = New-Object System.Security.Principal.WindowsPrincipal $identity
$isAdmin = $principal.IsInRole([System.Security.Principal.WindowsBuiltInRole]::Administrator)
$ubr = 0
if ($null -ne $cv.UBR) { $ubr = [int]$cv.UBR }
Write-SwdtResult -Data ([ordered]@{
    hostname       = [Environment]::MachineName
    productName    = [string]$cv.ProductName
    displayVersion = [string]$cv.DisplayVersion
    currentBuild   = [string]$cv.CurrentBuild
    ubr            = $ubr
    username       = $identity.Name
    isAdmin        = [bool]$isAdmin
    psVersion      = $PSVersionTable.PSVersion.ToString()
})
