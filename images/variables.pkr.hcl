# Inputs of the Windows Server images (windows.pkr.hcl). Set them with
# -var name=value or a *.pkrvars.hcl file; `packer validate` lists what is
# missing.

variable "windows_version" {
  type        = string
  default     = "2022"
  description = "Windows Server release to install: 2022 or 2019."
  validation {
    condition     = contains(["2022", "2019"], var.windows_version)
    error_message = "The windows_version must be 2022 or 2019."
  }
}

variable "edition" {
  type        = string
  default     = "datacenter-core"
  description = "Edition and installation option: standard-core, standard-desktop, datacenter-core or datacenter-desktop."
  validation {
    condition     = contains(["standard-core", "standard-desktop", "datacenter-core", "datacenter-desktop"], var.edition)
    error_message = "The edition must be standard-core, standard-desktop, datacenter-core or datacenter-desktop."
  }
}

variable "iso_url" {
  type        = string
  description = "Windows Server installation ISO (an evaluation ISO from the Microsoft Evaluation Center works): a local path or URL."
}

variable "iso_checksum" {
  type        = string
  description = "Checksum of iso_url, e.g. sha256:3e4fa6d8... (Get-FileHash or sha256sum)."
}

variable "virtio_win_dir" {
  type        = string
  default     = "virtio-win"
  description = "libvirt only: the contents of the virtio-win driver ISO (fedorapeople.org, virtio-win stable), mounted or extracted (bsdtar -xf virtio-win.iso -C virtio-win). Its disk, network, balloon and serial drivers go onto the answer-file CD."
}

variable "ssh_public_key_file" {
  type        = string
  default     = "~/.ssh/id_ed25519.pub"
  description = "Public key put into C:\\ProgramData\\ssh\\administrators_authorized_keys: what swdt (and Packer) log in with."
}

variable "ssh_private_key_file" {
  type        = string
  default     = "~/.ssh/id_ed25519"
  description = "Private key of ssh_public_key_file, for Packer's own SSH connection."
}

variable "admin_password" {
  type        = string
  sensitive   = true
  description = "Password of the built-in Administrator (Windows requires one; key login does not use it). Meets the complexity rules: 3 of upper, lower, digit, symbol."
}

variable "disk_size_mb" {
  type        = number
  default     = 61440
  description = "Size of the system disk in MiB."
}

variable "memory_mb" {
  type        = number
  default     = 4096
  description = "Memory of the build VM in MiB."
}

variable "cpus" {
  type        = number
  default     = 2
  description = "Virtual CPUs of the build VM."
}

variable "hyperv_switch" {
  type        = string
  default     = "Default Switch"
  description = "Hyper-V only: the virtual switch the build VM is connected to (it needs DHCP and internet to install OpenSSH Server)."
}

variable "output_directory" {
  type        = string
  default     = "output"
  description = "Where the image is written: <output_directory>/<builder>-windows-<version>/."
}
