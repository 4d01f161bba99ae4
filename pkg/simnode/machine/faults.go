package machine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// Faults are injected failures, kept in <StateDir>/faults.json and re-read
// on every connection, op and SFTP open, so a test or a user can change
// them while simnode runs.
type Faults struct {
	// OpLatencyMS delays ops by name; "*" applies to every op.
	OpLatencyMS map[string]int `json:"opLatencyMs,omitempty"`
	// CutAfterBytes closes the SSH connection once that many bytes of SFTP
	// write data arrived on it. It applies once and is then cleared.
	CutAfterBytes int64 `json:"cutAfterBytes,omitempty"`
	// FailOps names ops that fail once each with kind "injected".
	FailOps []string `json:"failOps,omitempty"`
	// ChocoDownloadFails makes the Chocolatey install script's download
	// fail, as on a node without internet access.
	ChocoDownloadFails bool `json:"chocoDownloadFails,omitempty"`
	// HeldOpen are files another process holds open without sharing
	// delete access (a virus scanner, an editor): as on NTFS they cannot
	// be renamed or removed (sharing violation) while the fault is set.
	HeldOpen []string `json:"heldOpen,omitempty"`
	// SharedOpen are files another process holds open sharing delete
	// access (a log reader, a backup agent): they can be renamed and
	// deleted, but on a release before 1903 (Server 2019) a deleted one's
	// name stays taken until the fault no longer names it (release.go).
	// The hold is on the file the path named when the fault was first
	// seen: it follows that file when it is renamed.
	SharedOpen []string `json:"sharedOpen,omitempty"`
	// DamageEncoded damages the next encoded upload (a file ending in
	// .swdt-zst) the agent reads: "truncate" ends it halfway, "corrupt"
	// flips a byte in its middle. It applies once and is then cleared.
	DamageEncoded string `json:"damageEncoded,omitempty"`
	// HoldAgent stops the agent at one step of an op until its session
	// ends (see AgentHold): the point at which a test kills swdt.
	HoldAgent *AgentHold `json:"holdAgent,omitempty"`
	// MissingAPIs are Win32 calls the node lacks, as Wine and stripped-down
	// or hardened images do (see MissingAPI* in missing.go).
	MissingAPIs []string `json:"missingApis,omitempty"`
}

// heldOpen reports whether Faults.HeldOpen names w.
func (m *Machine) heldOpen(w ntfs.Path) bool {
	for _, p := range m.Faults().HeldOpen {
		if h, err := ntfs.ParsePath(p); err == nil && h.Key() == w.Key() {
			return true
		}
	}
	return false
}

func (m *Machine) faultsFile() string { return filepath.Join(m.dir, "faults.json") }

// Faults reads the current faults; a missing or broken file means none.
func (m *Machine) Faults() Faults {
	m.faultsMu.Lock()
	defer m.faultsMu.Unlock()
	return m.readFaultsLocked()
}

func (m *Machine) readFaultsLocked() Faults {
	var f Faults
	raw, err := os.ReadFile(m.faultsFile())
	if err != nil {
		return f
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		m.log.Warn("ignoring unreadable faults file", "file", m.faultsFile(), "err", err)
	}
	return f
}

// UpdateFaults changes the faults file under a lock.
func (m *Machine) UpdateFaults(fn func(f *Faults)) error {
	m.faultsMu.Lock()
	defer m.faultsMu.Unlock()
	f := m.readFaultsLocked()
	fn(&f)
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp := m.faultsFile() + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("write faults: %w", err)
	}
	return os.Rename(tmp, m.faultsFile())
}

// TakeFailOp reports whether op should fail now, consuming the fault.
func (m *Machine) TakeFailOp(op string) bool {
	hit := false
	_ = m.UpdateFaults(func(f *Faults) {
		for i, name := range f.FailOps {
			if name == op {
				f.FailOps = append(f.FailOps[:i], f.FailOps[i+1:]...)
				hit = true
				return
			}
		}
	})
	return hit
}

// AgentHold stops the agent at one step of an op: right after its Count-th
// (1 when 0) call of Call whose target contains Target (any target when
// empty), the call returns and the agent waits, changing nothing more,
// until its session ends; with Cut the SSH connection is closed there and
// then, as when the node drops off the network. Then the agent runs on to
// the end of its op (after an agent of op ResumeWhen has started, when
// set), or with Dies it is dead. Call is a winos.OS method that changes
// the machine: StopService, StartService, Rename, Remove, WriteFile,
// KillProcess, SetRecovery. The hold applies once and is then cleared.
type AgentHold struct {
	Op         string `json:"op"`
	Call       string `json:"call"`
	Target     string `json:"target,omitempty"`
	Count      int    `json:"count,omitempty"`
	Cut        bool   `json:"cut,omitempty"`
	Dies       bool   `json:"dies,omitempty"`
	ResumeWhen string `json:"resumeWhen,omitempty"`
}
