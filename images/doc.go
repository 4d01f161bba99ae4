// Package images holds the Packer templates (HCL2) that build Windows
// Server 2022 and 2019 VM images ready for swdt, for libvirt (qemu, qcow2)
// and Hyper-V (hyperv-iso, vhdx), with their answer files and scripts.
// README.md says how to build and boot them. It has no Go code; its test
// checks that the templates and answer files are well-formed.
package images
