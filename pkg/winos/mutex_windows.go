package winos

import (
	"context"
	"runtime"
	"sync"

	"golang.org/x/sys/windows"
)

// mutexPoll is how often a wait for a mutex looks at its context (in
// milliseconds).
const mutexPoll = 100

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
		// An existing mutex is opened (with ERROR_ALREADY_EXISTS).
		h, err := windows.CreateMutex(nil, false, p)
		if h == 0 {
			got <- result{err: winErr("create mutex", full, err)}
			return
		}
		defer windows.CloseHandle(h)
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
