package simos

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"

	"sigs.k8s.io/swdt/pkg/winos"
)

// Named mutexes (CreateMutex in the Global\ namespace): one owner at a
// time, waiters block, and a mutex whose owner ends without releasing it
// is abandoned: the next waiter gets it and is told so. They live as long
// as the simnode process (a restart is a reboot) and are not saved.
//
// Any local account may create a named mutex in Global\ (with
// SeCreateGlobalPrivilege, which interactive users hold), and then holds
// it as long as it likes: a mutex held by an account other than
// Administrators, SYSTEM or the caller's own is refused at once with
// ERROR_INVALID_OWNER, as the real layer refuses one whose owner is such
// an account. (Simplified: a mutex exists while it is held.)

// mutexTable holds the machine's named mutexes.
type mutexTable struct {
	mu sync.Mutex
	// owner by lower-case name (0: free); abandoned names those whose
	// owner ended holding them.
	owner     map[string]int64
	abandoned map[string]bool
	// creator is the account (SID) that holds each held name.
	creator map[string]string
	// changed is closed and replaced whenever a mutex is released.
	changed chan struct{}
}

// mutexOwners hands out owner IDs: one per agent invocation.
var mutexOwners atomic.Int64

func newMutexOwner() int64 { return mutexOwners.Add(1) }

// lock waits until owner, running as account user, holds name, or ctx
// ends. A name another account holds is refused (trusted says which
// accounts are not another).
func (t *mutexTable) lock(ctx context.Context, name string, owner int64, user string, trusted func(sid string) bool) (abandoned bool, err error) {
	key := strings.ToLower(name)
	for {
		t.mu.Lock()
		if t.owner == nil {
			t.owner, t.abandoned, t.creator, t.changed = map[string]int64{}, map[string]bool{}, map[string]string{}, make(chan struct{})
		}
		if c := t.creator[key]; t.owner[key] != 0 && !trusted(c) {
			t.mu.Unlock()
			return false, &winos.Error{Op: "open mutex", Target: `Global\` + name, Code: winos.ErrInvalidOwner,
				Message: "its owner is " + c + ", not Administrators or SYSTEM"}
		}
		if t.owner[key] == 0 {
			t.owner[key] = owner
			t.creator[key] = user
			abandoned = t.abandoned[key]
			delete(t.abandoned, key)
			t.mu.Unlock()
			return abandoned, nil
		}
		changed := t.changed
		t.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// unlock releases name if owner holds it; abandon marks it abandoned.
func (t *mutexTable) unlock(name string, owner int64, abandon bool) {
	key := strings.ToLower(name)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.owner == nil || t.owner[key] != owner {
		return
	}
	delete(t.owner, key)
	delete(t.creator, key)
	if abandon {
		t.abandoned[key] = true
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// abandonAll releases every mutex owner holds as abandoned: its process
// ended.
func (t *mutexTable) abandonAll(owner int64) {
	t.mu.Lock()
	var names []string
	for k, o := range t.owner {
		if o == owner {
			names = append(names, k)
		}
	}
	t.mu.Unlock()
	for _, k := range names {
		t.unlock(k, owner, true)
	}
}

// LockMutex takes the named mutex for one caller of the node's Windows
// layer (each call is its own owner; an agent's calls share one, see
// agentOS).
func (o simOS) LockMutex(ctx context.Context, name string) (func(), bool, error) {
	return o.n.lockMutex(ctx, name, newMutexOwner())
}

func (n *Node) lockMutex(ctx context.Context, name string, owner int64) (func(), bool, error) {
	user, err := simOS{n}.CurrentUser()
	if err != nil {
		return nil, false, err
	}
	trusted := func(sid string) bool {
		return sid == winos.SIDAdministrators || sid == winos.SIDSystem || sid == user.Owner
	}
	abandoned, err := n.h.mutexes.lock(ctx, name, owner, user.Owner, trusted)
	if err != nil {
		return nil, false, err
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			// What the agent changed it changed under the mutex: an agent
			// that takes it next works after it, not beside it.
			n.h.agents.settled(owner)
			n.h.mutexes.unlock(name, owner, false)
		})
	}, abandoned, nil
}
