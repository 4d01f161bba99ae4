package binfmt

import (
	"bytes"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// peImage is the smallest PE image debug/pe reads: a DOS header pointing
// at a COFF header for machine, with no sections.
func peImage(machine uint16) []byte {
	b := make([]byte, 64)
	copy(b, "MZ")
	binary.LittleEndian.PutUint32(b[0x3c:], 64)
	b = append(b, "PE\x00\x00"...)
	coff := make([]byte, 20)
	binary.LittleEndian.PutUint16(coff, machine)
	return append(b, coff...)
}

// machoImage is a Mach-O header for cpu with no load commands.
func machoImage(cpu macho.Cpu) []byte {
	b := make([]byte, 32)
	binary.LittleEndian.PutUint32(b, macho.Magic64)
	binary.LittleEndian.PutUint32(b[4:], uint32(cpu))
	binary.LittleEndian.PutUint32(b[12:], uint32(macho.TypeExec))
	return b
}

func TestIdentify(t *testing.T) {
	self, err := os.ReadFile(os.Args[0]) // this test binary: ELF on Linux
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"windows/amd64", peImage(pe.IMAGE_FILE_MACHINE_AMD64), "a PE image for windows/amd64"},
		{"windows/arm64", peImage(pe.IMAGE_FILE_MACHINE_ARM64), "a PE image for windows/arm64"},
		{"darwin/arm64", machoImage(macho.CpuArm64), "a Mach-O executable for darwin/arm64"},
		{"a script", []byte("#!/bin/sh\necho hi\n"), "a script (#!)"},
		{"an MZ stand-in", []byte("MZ kubelet v1.37.2"), "not a program swdt recognises"},
		{"text", []byte("hello"), "not a program swdt recognises"},
		{"empty", nil, "not a program swdt recognises"},
	}
	if runtime.GOOS == "linux" {
		tests = append(tests, struct {
			name string
			data []byte
			want string
		}{"this test, built for linux", self, "an ELF executable for linux/" + runtime.GOARCH})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := Identify(bytes.NewReader(tt.data))
			if err != nil || info.String() != tt.want {
				t.Errorf("Identify = %q (%+v), %v; want %q", info, info, err, tt.want)
			}
		})
	}
}

func TestCheckWindows(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	amd64 := write("amd64.exe", peImage(pe.IMAGE_FILE_MACHINE_AMD64))
	arm64 := write("arm64.exe", peImage(pe.IMAGE_FILE_MACHINE_ARM64))
	i386 := write("386.exe", peImage(pe.IMAGE_FILE_MACHINE_I386))
	mac := write("mac", machoImage(macho.CpuAmd64))
	standIn := write("standin.exe", []byte("MZ stand-in"))
	tests := []struct {
		path, arch string
		want       string // "" passes
	}{
		{amd64, "amd64", ""},
		{amd64, "", ""},
		{arm64, "arm64", ""},
		{arm64, "", ""},
		{standIn, "amd64", ""},
		{arm64, "amd64", "is a PE image for windows/arm64, but the node is windows/amd64: build it with GOOS=windows GOARCH=amd64"},
		{i386, "", "is a PE image for windows/386, not a program for windows/amd64 or windows/arm64"},
		{mac, "amd64", "is a Mach-O executable for darwin/amd64, but the node is windows/amd64: build it with GOOS=windows GOARCH=amd64 (for Kubernetes, KUBE_BUILD_PLATFORMS=windows/amd64)"},
	}
	for _, tt := range tests {
		err := CheckWindows(tt.path, tt.arch)
		var nw *NotForWindowsError
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckWindows(%s, %q) = %v, want nil", filepath.Base(tt.path), tt.arch, err)
		case tt.want != "" && (!errors.As(err, &nw) || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckWindows(%s, %q) = %v, want %q", filepath.Base(tt.path), tt.arch, err, tt.want)
		}
	}
	if err := CheckWindows(filepath.Join(dir, "missing"), ""); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
