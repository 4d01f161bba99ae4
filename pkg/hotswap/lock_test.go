package hotswap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
)

// The workflow's side of the lock and the journal: lock first, repair an
// unfinished swap before planning, wait for a live holder, break a dead
// one, retry a repair while the node does not answer.
func TestRunLocksAndRepairsFirst(t *testing.T) {
	host, _ := os.Hostname()
	space := pidSpace()
	dead := ops.LockOwner{RunID: "dead", Host: host, PID: 1 << 30, PIDSpace: space, Command: "swdt kubernetes"}
	// elsewhere shares the host name but not the PID space (another
	// container): its PID says nothing here.
	elsewhere := ops.LockOwner{RunID: "elsewhere", Host: host, PID: 1 << 30, PIDSpace: "another-container", Command: "swdt kubernetes"}
	// reused names a live PID (this test's parent) that started at
	// another time: the holder is gone, the PID was given again.
	reused := ops.LockOwner{RunID: "reused", Host: host, PID: os.Getppid(), PIDSpace: space, PIDStart: "1", Command: "swdt kubernetes"}
	live := ops.LockOwner{RunID: "live", Host: "elsewhere", PID: 7, Command: "swdt kubernetes"}
	// ended is an earlier run of this process whose lock came back (a VM
	// reverted to a snapshot of a swap); sibling a run of this process
	// that holds its lock now.
	ended := ops.LockOwner{RunID: "ended", Host: host, PID: os.Getpid(), PIDSpace: space, Command: "swdt kubernetes"}
	sibling := ops.LockOwner{RunID: "sibling", Host: host, PID: os.Getpid(), PIDSpace: space, Command: "swdt kubernetes"}
	setLive(sibling.RunID, true)
	defer setLive(sibling.RunID, false)
	aborted, abort := context.WithCancel(context.Background())
	abort()
	unfinished := &ops.UnfinishedSwap{Journal: ops.SwapJournal{Owner: dead, Started: "2025-01-01T00:00:00Z",
		Request: ops.ServiceSwapRequest{Items: []ops.SwapItem{{Service: "kubelet", Destination: `C:\k\kubelet.exe`}}}}}
	tests := []struct {
		name      string
		setup     func(f *fakeNode)
		opts      Options
		wantCalls string
		wantErr   string
		// wantBreak is the RunID the run asked to break.
		wantBreak string
		wantSaid  string
		// neverSaid is what the steps must not say ("": anything goes).
		neverSaid string
		// needsStart skips the case where processes' start times cannot
		// be read.
		needsStart bool
	}{
		{name: "a holder of this host name in another PID space is waited for",
			setup:     func(f *fakeNode) { f.holder, f.holdFor = &ops.LockHolder{Owner: elsewhere}, 2 },
			wantCalls: "lock lock lock+inspect swap+unlock",
			wantSaid:  "waiting for the node's swap lock, held by swdt kubernetes run elsewhere"},
		{name: "a holder whose PID now names a later process is broken at once", needsStart: true,
			setup:     func(f *fakeNode) { f.holder, f.holdFor = &ops.LockHolder{Owner: reused}, -1 },
			wantCalls: "lock lock+inspect swap+unlock", wantBreak: "reused"},
		{name: "a run locks, swaps and unlocks",
			wantCalls: "lock+inspect swap+unlock"},
		{name: "a dry run takes no lock and repairs nothing", opts: Options{DryRun: true},
			setup:     func(f *fakeNode) { f.unfinished = unfinished },
			wantCalls: "inspect"},
		{name: "an unfinished swap is repaired before the plan",
			setup:     func(f *fakeNode) { f.unfinished = unfinished },
			wantCalls: "lock+inspect recover inspect swap+unlock",
			wantSaid:  "repaired the unfinished swap of swdt kubernetes run dead"},
		{name: "a repair is retried while the node does not answer",
			setup: func(f *fakeNode) {
				f.unfinished = unfinished
				f.recoverErrs = []error{errors.New("connection lost"), errors.New("connection lost")}
			},
			wantCalls: "lock+inspect recover recover recover inspect swap+unlock",
			wantSaid:  "trying again"},
		{name: "a repair given up at the second Ctrl-C says so, not that it tries again",
			opts: Options{Abort: aborted},
			setup: func(f *fakeNode) {
				f.unfinished = unfinished
				f.recoverErrs = []error{errors.New("connection lost")}
			},
			wantCalls: "lock+inspect recover unlock",
			wantErr:   ": given up at the second Ctrl-C; nothing else was done",
			neverSaid: "trying again"},
		{name: "a repair the node refuses stops the run",
			setup: func(f *fakeNode) {
				f.unfinished = unfinished
				f.recoverErrs = []error{&ops.Error{Op: "swap-recover", Kind: "locked", Message: "the node is locked"}}
			},
			wantCalls: "lock+inspect recover unlock",
			wantErr:   "repair the unfinished swap of swdt kubernetes run dead"},
		{name: "a dead holder on this machine is broken at once",
			setup:     func(f *fakeNode) { f.holder, f.holdFor = &ops.LockHolder{Owner: dead}, -1 },
			wantCalls: "lock lock+inspect swap+unlock", wantBreak: "dead"},
		{name: "an ended run of this process is broken at once",
			setup:     func(f *fakeNode) { f.holder, f.holdFor = &ops.LockHolder{Owner: ended}, -1 },
			wantCalls: "lock lock+inspect swap+unlock", wantBreak: "ended"},
		{name: "a live run of this process is waited for",
			setup:     func(f *fakeNode) { f.holder, f.holdFor = &ops.LockHolder{Owner: sibling}, 2 },
			wantCalls: "lock lock lock+inspect swap+unlock",
			wantSaid:  "waiting for the node's swap lock, held by swdt kubernetes run sibling"},
		{name: "a live holder is waited for, with a message",
			setup:     func(f *fakeNode) { f.holder, f.holdFor = &ops.LockHolder{Owner: live}, 2 },
			wantCalls: "lock lock lock+inspect swap+unlock",
			wantSaid:  "waiting for the node's swap lock, held by swdt kubernetes run live"},
		{name: "a live holder past the wait fails the run clearly", opts: Options{LockWait: time.Millisecond},
			setup:     func(f *fakeNode) { f.holder, f.holdFor = &ops.LockHolder{Owner: live}, -1 },
			wantCalls: "lock lock",
			wantErr:   "the node is locked by swdt kubernetes run live"},
	}
	lockPoll, repairRetry = 10*time.Millisecond, 10*time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needsStart && processStart(os.Getppid()) == "" {
				t.Skip("this system does not tell when a process started")
			}
			f := &fakeNode{files: map[string]string{}, services: seedServices(nil)}
			if tt.setup != nil {
				tt.setup(f)
			}
			obs := &recordingObserver{}
			opts := tt.opts
			opts.Observer = obs
			_, err := Run(context.Background(), f, items(t)[1:2], opts)
			if got := strings.Join(f.calls, " "); got != tt.wantCalls {
				t.Errorf("calls = %q, want %q", got, tt.wantCalls)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
			if tt.wantBreak != "" && f.locks[len(f.locks)-1].Break != tt.wantBreak {
				t.Errorf("break = %q, want %q", f.locks[len(f.locks)-1].Break, tt.wantBreak)
			}
			if !strings.Contains(obs.said(), tt.wantSaid) {
				t.Errorf("steps do not say %q:\n%s", tt.wantSaid, obs.said())
			}
			if tt.neverSaid != "" && strings.Contains(obs.said()+"\n"+fmt.Sprint(err), tt.neverSaid) {
				t.Errorf("the run says %q: %v\n%s", tt.neverSaid, err, obs.said())
			}
			liveRuns.Lock()
			if len(liveRuns.ids) != 1 || !liveRuns.ids[sibling.RunID] {
				t.Errorf("live runs afterwards = %v, want only %s: a run that ended is still live", liveRuns.ids, sibling.RunID)
			}
			liveRuns.Unlock()
			if len(f.swaps) > 0 && (f.swaps[0].Owner.RunID == "" || !strings.HasSuffix(f.swaps[0].Items[0].Staged, f.swaps[0].Owner.RunID)) {
				t.Errorf("swap owner %+v, staged %s: staged names are not the run's own", f.swaps[0].Owner, f.swaps[0].Items[0].Staged)
			}
		})
	}
}

type recordingObserver struct {
	nopObserver
	steps []string
}

func (o *recordingObserver) Step(msg string) { o.steps = append(o.steps, msg) }
func (o *recordingObserver) said() string    { return strings.Join(o.steps, "\n") }
