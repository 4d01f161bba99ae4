// Package binfmt tells what kind of program a file is: a Windows PE image
// and its architecture, or an ELF or Mach-O executable and the OS and
// architecture it was built for. swdt uses it to refuse a build that
// cannot run on the node (a forgotten GOOS=windows) before it sends it.
//
// It reads headers only, with the standard library's debug packages, and
// never runs anything.
package binfmt

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Info is what a file is.
type Info struct {
	// Format is "pe", "elf", "mach-o", "script" or "" (not a program
	// binfmt knows).
	Format string
	// OS and Arch are GOOS and GOARCH names where the header says them
	// ("windows"/"amd64" for a PE image of the x64 machine type).
	OS, Arch string
}

// String says what the file is, as an error shows it: "an ELF
// executable for linux/amd64", "a PE image for windows/arm64".
func (i Info) String() string {
	switch i.Format {
	case "pe":
		return "a PE image for windows/" + i.Arch
	case "elf", "mach-o":
		name := map[string]string{"elf": "an ELF executable", "mach-o": "a Mach-O executable"}[i.Format]
		if i.OS == "" {
			return name + " for " + i.Arch
		}
		return name + " for " + i.OS + "/" + i.Arch
	case "script":
		return "a script (#!)"
	}
	return "not a program swdt recognises"
}

// Identify reads r's headers.
func Identify(r io.ReaderAt) (Info, error) {
	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil && !errors.Is(err, io.EOF) {
		return Info{}, err
	}
	switch {
	case bytes.HasPrefix(magic[:], []byte("MZ")):
		machine, ok := peMachine(r)
		if !ok {
			// An MZ header without a PE image (a DOS program, or a
			// stand-in): not known to be wrong.
			return Info{}, nil
		}
		arch := peArch[machine]
		if arch == "" {
			arch = fmt.Sprintf("machine type %#x", machine)
		}
		return Info{Format: "pe", OS: "windows", Arch: arch}, nil
	case bytes.Equal(magic[:], []byte(elf.ELFMAG)):
		f, err := elf.NewFile(r)
		if err != nil {
			return Info{Format: "elf"}, nil
		}
		return Info{Format: "elf", OS: elfOS(f), Arch: elfArch[f.Machine]}, nil
	case bytes.HasPrefix(magic[:], []byte("#!")):
		return Info{Format: "script"}, nil
	}
	if f, err := macho.NewFile(r); err == nil {
		return Info{Format: "mach-o", OS: "darwin", Arch: machoArch[f.Cpu]}, nil
	}
	if _, err := macho.NewFatFile(r); err == nil {
		return Info{Format: "mach-o", OS: "darwin", Arch: "universal"}, nil
	}
	return Info{}, nil
}

// peMachine reads the machine type of the COFF header that the DOS
// header's e_lfanew points at, behind the "PE\0\0" signature.
func peMachine(r io.ReaderAt) (uint16, bool) {
	var off [4]byte
	if _, err := r.ReadAt(off[:], 0x3c); err != nil {
		return 0, false
	}
	var sig [6]byte
	if _, err := r.ReadAt(sig[:], int64(binary.LittleEndian.Uint32(off[:]))); err != nil || string(sig[:4]) != "PE\x00\x00" {
		return 0, false
	}
	return binary.LittleEndian.Uint16(sig[4:]), true
}

var peArch = map[uint16]string{
	pe.IMAGE_FILE_MACHINE_AMD64: "amd64",
	pe.IMAGE_FILE_MACHINE_ARM64: "arm64",
	pe.IMAGE_FILE_MACHINE_I386:  "386",
	pe.IMAGE_FILE_MACHINE_ARMNT: "arm",
}

var elfArch = map[elf.Machine]string{
	elf.EM_X86_64:  "amd64",
	elf.EM_AARCH64: "arm64",
	elf.EM_386:     "386",
	elf.EM_ARM:     "arm",
	elf.EM_RISCV:   "riscv64",
	elf.EM_PPC64:   "ppc64le",
	elf.EM_S390:    "s390x",
}

var machoArch = map[macho.Cpu]string{
	macho.CpuAmd64: "amd64",
	macho.CpuArm64: "arm64",
}

// elfOS names the OS an ELF file was built for: Linux unless its ABI
// byte says FreeBSD (Go's linux binaries say SYSV).
func elfOS(f *elf.File) string {
	if f.OSABI == elf.ELFOSABI_FREEBSD {
		return "freebsd"
	}
	return "linux"
}

// NotForWindowsError is a program that cannot run on a Windows node of
// the architecture wanted.
type NotForWindowsError struct {
	Path string
	Info Info
	// Arch is the node's architecture ("amd64", "arm64"), "" when any.
	Arch string
}

func (e *NotForWindowsError) Error() string {
	what := "not a program for windows/amd64 or windows/arm64"
	if e.Arch != "" {
		what = "but the node is windows/" + e.Arch
	}
	return fmt.Sprintf("%s is %s, %s: build it with GOOS=windows GOARCH=%s (for Kubernetes, KUBE_BUILD_PLATFORMS=windows/%s)",
		e.Path, e.Info, what, or(e.Arch, "amd64"), or(e.Arch, "amd64"))
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// CheckWindows returns a *NotForWindowsError when the file at path is a
// program for another OS, or a PE image for another architecture than
// arch ("" accepts amd64 and arm64). A file binfmt does not recognise
// passes: only what is certainly wrong is refused.
func CheckWindows(path, arch string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := Identify(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return Check(path, info, arch)
}

// Check is CheckWindows for a file already identified.
func Check(path string, info Info, arch string) error {
	switch {
	case info.Format == "":
		return nil
	case info.Format != "pe":
	case arch != "" && info.Arch != arch:
	case arch == "" && info.Arch != "amd64" && info.Arch != "arm64":
	default:
		return nil
	}
	return &NotForWindowsError{Path: path, Info: info, Arch: arch}
}
