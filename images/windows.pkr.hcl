# Windows Server 2022 and 2019 images ready for swdt, for libvirt/KVM
# (qemu: qcow2 with virtio drivers) and Hyper-V (hyperv-iso: generation 2,
# vhdx):
#
#   packer init images
#   packer build -only 'qemu.windows' -var-file my.pkrvars.hcl images
#   packer build -only 'hyperv-iso.windows' -var windows_version=2019 -var-file my.pkrvars.hcl images
#
# Windows Setup reads autounattend.xml from the second CD, installs the
# chosen edition, sets the Administrator password and logs on once, when
# scripts/setup-ssh.ps1 installs and enables OpenSSH Server with a firewall
# rule and puts ssh_public_key_file into administrators_authorized_keys
# with the ACL sshd requires. Packer then logs in with the key, checks it
# all, and shuts the VM down.

packer {
  required_version = ">= 1.9.0"
  required_plugins {
    qemu = {
      version = ">= 1.1.0"
      source  = "github.com/hashicorp/qemu"
    }
    hyperv = {
      version = ">= 1.1.0"
      source  = "github.com/hashicorp/hyperv"
    }
  }
}

locals {
  # Image indexes of the Windows Server 2019 and 2022 ISOs.
  image_index = {
    "standard-core"      = 1
    "standard-desktop"   = 2
    "datacenter-core"    = 3
    "datacenter-desktop" = 4
  }
  vm_name = "windows-${var.windows_version}"
  # The password goes into XML.
  admin_password_xml = replace(replace(replace(var.admin_password, "&", "&amp;"), "<", "&lt;"), ">", "&gt;")
  unattend_vars = {
    image_index    = local.image_index[var.edition]
    admin_password = local.admin_password_xml
  }
  # What the second CD holds besides the answer file and the public key:
  # the SSH setup script and, for qemu, virtio-win's drivers (Windows
  # Setup searches the CD for the disk driver: autounattend-bios.xml).
  cd_files = ["${path.root}/scripts/setup-ssh.ps1"]
  virtio_drivers = [for d in ["viostor", "vioscsi", "NetKVM", "Balloon", "vioserial"] : "${var.virtio_win_dir}/${d}"]
  authorized_key = trimspace(file(pathexpand(var.ssh_public_key_file)))
  shutdown       = "shutdown /s /t 5 /f /d p:4:1 /c \"Packer shutdown\""
}

source "qemu" "windows" {
  vm_name          = "${local.vm_name}.qcow2"
  output_directory = "${var.output_directory}/qemu-${local.vm_name}"
  iso_url          = var.iso_url
  iso_checksum     = var.iso_checksum
  accelerator      = "kvm"
  format           = "qcow2"
  disk_size        = "${var.disk_size_mb}M"
  disk_interface   = "virtio"
  net_device       = "virtio-net"
  memory           = var.memory_mb
  cpus             = var.cpus
  headless         = true
  cd_files         = concat(local.cd_files, local.virtio_drivers)
  cd_content = {
    "autounattend.xml"   = templatefile("${path.root}/unattend/autounattend-bios.xml", local.unattend_vars)
    "authorized_key.pub" = local.authorized_key
  }
  communicator         = "ssh"
  ssh_username         = "Administrator"
  ssh_private_key_file = var.ssh_private_key_file
  ssh_timeout          = "2h"
  shutdown_command     = local.shutdown
  shutdown_timeout     = "15m"
}

source "hyperv-iso" "windows" {
  vm_name               = local.vm_name
  output_directory      = "${var.output_directory}/hyperv-${local.vm_name}"
  iso_url               = var.iso_url
  iso_checksum          = var.iso_checksum
  generation            = 2
  enable_secure_boot    = true
  secure_boot_template  = "MicrosoftWindows"
  disk_size             = var.disk_size_mb
  memory                = var.memory_mb
  cpus                  = var.cpus
  switch_name           = var.hyperv_switch
  enable_dynamic_memory = false
  headless              = true
  cd_files              = local.cd_files
  cd_content = {
    "autounattend.xml"   = templatefile("${path.root}/unattend/autounattend-uefi.xml", local.unattend_vars)
    "authorized_key.pub" = local.authorized_key
  }
  # A generation 2 VM boots the ISO only after "Press any key".
  boot_wait            = "2s"
  boot_command         = ["<spacebar><wait><spacebar>"]
  communicator         = "ssh"
  ssh_username         = "Administrator"
  ssh_private_key_file = var.ssh_private_key_file
  ssh_timeout          = "2h"
  shutdown_command     = local.shutdown
  shutdown_timeout     = "15m"
}

build {
  name    = "swdt-windows"
  sources = ["source.qemu.windows", "source.hyperv-iso.windows"]

  # What swdt relies on, checked over the key login Packer just used.
  provisioner "powershell" {
    inline = [
      "$ErrorActionPreference = 'Stop'",
      "$svc = Get-Service -Name sshd",
      "if ($svc.Status -ne 'Running' -or $svc.StartType -ne 'Automatic') { throw 'sshd is not running automatically' }",
      "if (-not (Get-NetFirewallRule -Name 'OpenSSH-Server-In-TCP' -ErrorAction SilentlyContinue)) { throw 'no firewall rule for sshd' }",
      "icacls.exe C:\\ProgramData\\ssh\\administrators_authorized_keys",
    ]
  }
}
