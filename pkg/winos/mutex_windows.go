package winos

import (
	"context"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// mutexPoll is how often a wait for a mutex looks at its context (in
// milliseconds).
const mutexPoll = 100

// mutexAttributes give a mutex the agent creates a protected DACL: only
// SYSTEM and Administrators may open it (the default DACL would let
// other accounts open and hold it).
var mutexAttributes = func() *windows.SecurityAttributes {
	sd, err := windows.SecurityDescriptorFromString("D:P(A;;GA;;;SY)(A;;GA;;;BA)")
	if err != nil {
		return nil // the default DACL; the owner is still checked
	}
	return &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}
}()

// trustedOwner fails with ERROR_INVALID_OWNER when the mutex h, which
// existed before, belongs to an account other than Administrators,
// SYSTEM or the agent's own: any local account may create a Global\
// mutex first and hold it.
func trustedOwner(h windows.Handle, name string) error {
	sd, err := windows.GetSecurityInfo(h, windows.SE_KERNEL_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return winErr("read mutex owner", name, err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return winErr("read mutex owner", name, err)
	}
	if owner == nil {
		return &Error{Op: "open mutex", Target: name, Code: ErrInvalidOwner, Message: "it has no owner"}
	}
	sid := owner.String()
	if sid == SIDAdministrators || sid == SIDSystem {
		return nil
	}
	token := windows.GetCurrentProcessToken()
	if tu, err := token.GetTokenUser(); err == nil && tu.User.Sid.Equals(owner) {
		return nil
	}
	if own, err := tokenOwner(token); err == nil && own == sid {
		return nil
	}
	return &Error{Op: "open mutex", Target: name, Code: ErrInvalidOwner, Message: "its owner is " + sid + ", not Administrators or SYSTEM"}
}

// LockMutex owns Global\name through CreateMutex and WaitForSingleObject.
// A mutex belongs to the thread that waited for it, and only that thread
// may release it: one goroutine, locked to its thread, waits, holds and
// releases.
func (windowsOS) LockMutex(ctx context.Context, name string) (func(), bool, error) {
	type result struct {
		abandoned bool
		err       error
	}
	full := `Global\` + name
	got := make(chan result, 1)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		p, err := windows.UTF16PtrFromString(full)
		if err != nil {
			got <- result{err: winErr("create mutex", full, err)}
			return
		}
		// An existing mutex is opened (with ERROR_ALREADY_EXISTS), and
		// then its owner checked.
		h, err := windows.CreateMutex(mutexAttributes, false, p)
		if h == 0 {
			got <- result{err: winErr("create mutex", full, err)}
			return
		}
		defer windows.CloseHandle(h)
		if err == windows.ERROR_ALREADY_EXISTS {
			if err := trustedOwner(h, full); err != nil {
				got <- result{err: err}
				return
			}
		}
		for {
			ev, err := windows.WaitForSingleObject(h, mutexPoll)
			switch ev {
			case windows.WAIT_OBJECT_0, windows.WAIT_ABANDONED:
				got <- result{abandoned: ev == windows.WAIT_ABANDONED}
				<-release
				_ = windows.ReleaseMutex(h)
				return
			case uint32(windows.WAIT_TIMEOUT):
				if ctx.Err() != nil {
					got <- result{err: ctx.Err()}
					return
				}
			default:
				got <- result{err: winErr("wait for mutex", full, err)}
				return
			}
		}
	}()
	r := <-got
	if r.err != nil {
		return nil, false, r.err
	}
	var once sync.Once
	return func() { once.Do(func() { close(release) }) }, r.abandoned, nil
}
