package ops_test

import (
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

const dest = `C:\k\kubelet.exe`

func TestStagedNames(t *testing.T) {
	staged := ops.StagedPath(dest, "r1")
	if d, id, ok := ops.StagedDest(staged); !ok || d != dest || id != "r1" {
		t.Errorf("StagedDest(%s) = %s, %s, %v", staged, d, id, ok)
	}
	if id, ok := ops.StagedRunID(staged, `C:\K\KUBELET.EXE`); !ok || id != "r1" {
		t.Errorf("StagedRunID ignoring case = %s, %v", id, ok)
	}
	for _, bad := range []string{dest, ops.StagedPath(dest, ""), ops.StagedPath(dest, `..\x`), ops.StagedPath(dest, "a.b"), ops.StagedPath("", "r1")} {
		if _, _, ok := ops.StagedDest(bad); ok {
			t.Errorf("StagedDest(%q) accepted", bad)
		}
	}
	if _, ok := ops.StagedRunID(ops.StagedPath(`C:\k\kube-proxy.exe`, "r1"), dest); ok {
		t.Error("StagedRunID accepted another destination's staged file")
	}
	if !ops.IsEncodedPath(ops.EncodedPath(staged)) || ops.IsEncodedPath(staged) {
		t.Error("IsEncodedPath does not tell an encoded upload from its staged file")
	}
}

func TestIsLeftover(t *testing.T) {
	staged := ops.StagedPath(dest, "0123abcd")
	tests := []struct {
		name string
		want bool
	}{
		{staged, true},
		{ops.EncodedPath(staged), true},
		{ops.BackupPath(dest), true},
		{ops.FailedPath(dest), true},
		{ops.WritingPath(dest), true},
		{ops.PartPath(dest), true},
		{ops.DeletedPath(dest, "9f8e7d6c"), true},
		{dest + ".swdt-del-", false},
		{`C:\K\KUBELET.EXE.SWDT-BAK`, true},
		{dest, false},
		{dest + ".swdt-new-a.b", false},
		{dest + ".swdt-new-", false},
		{dest + ".old", false},
		{`C:\k\kubelet.exe2.swdt-bak`, false},
		{ops.BackupPath(`C:\k\kube-proxy.exe`), false},
	}
	for _, tt := range tests {
		if got := ops.IsLeftover(tt.name, dest); got != tt.want {
			t.Errorf("IsLeftover(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
