package agent

import (
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/winos"
)

func TestProcessDescendants(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	procs := []winos.Process{
		{PID: 100, Name: "nssm.exe", Started: at(10)},
		{PID: 104, ParentPID: 100, Name: "powershell.exe", Started: at(11)},
		{PID: 108, ParentPID: 104, Name: "kubelet.exe", Started: at(12)},
		{PID: 112, ParentPID: 108, Name: "conhost.exe", Started: at(13)},
		// Started by an earlier process 100, which ended; nssm has its
		// PID since.
		{PID: 40, ParentPID: 100, Name: "orphan.exe", Started: at(1)},
		{PID: 44, ParentPID: 40, Name: "grandorphan.exe", Started: at(2)},
		// No start time read: taken as a child.
		{PID: 116, ParentPID: 100, Name: "unknown.exe"},
		{PID: 200, Name: "other.exe", Started: at(5)},
	}
	var got []int
	for _, p := range processDescendants(procs, 100) {
		got = append(got, p.PID)
	}
	if want := []int{104, 116, 108, 112}; !slices.Equal(got, want) {
		t.Errorf("descendants of 100 = %v, want %v (parents first, no PID reuse)", got, want)
	}
}
