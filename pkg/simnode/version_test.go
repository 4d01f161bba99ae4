package simnode

import (
	"bytes"
	"testing"
)

func TestFileVersion(t *testing.T) {
	n := StartTest(t).Node()
	pad := func(size int) []byte { return bytes.Repeat([]byte{0x90}, size) }
	tests := []struct {
		name    string
		content []byte
		want    string
	}{
		{name: "in the header", content: append([]byte("MZ SIMNODE-VERSION=1.31.0-alpha.1 "), pad(100)...), want: "1.31.0-alpha.1"},
		{name: "across a read boundary", content: append(pad(256*1024-10), []byte("SIMNODE-VERSION=2.0.1 ")...), want: "2.0.1"},
		{name: "none", content: []byte("MZ plain go binary"), want: ""},
		{name: "past the first MiB, as Windows never reads there", content: append(pad(VersionScanLimit), []byte("SIMNODE-VERSION=9.9.9 ")...), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := n.WriteFile(`C:\k\versioned.exe`, tt.content); err != nil {
				t.Fatal(err)
			}
			got, err := n.FileVersion(`C:\k\versioned.exe`)
			if err != nil || got != tt.want {
				t.Fatalf("FileVersion = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}
