//go:build linux

package main

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// opLog reads a simnode's -v log and adds up the time its agent ops took
// (the "op" lines' duration): the node's work, apart from the link and
// the laptop's.
type opLog struct {
	mu      sync.Mutex
	partial []byte
	total   time.Duration
	byOp    map[string]time.Duration
	// seen is signalled at each op line.
	seen chan struct{}
}

func newOpLog() *opLog { return &opLog{seen: make(chan struct{}, 1)} }

func (l *opLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.line(string(l.partial[:i]))
		l.partial = l.partial[i+1:]
	}
}

// line records one log line when it is an op's (slog's text format:
// msg=op op=NAME ... duration=D).
func (l *opLog) line(s string) {
	if !strings.Contains(s, " msg=op ") {
		return
	}
	var name string
	var d time.Duration
	for _, f := range strings.Fields(s) {
		if v, ok := strings.CutPrefix(f, "op="); ok {
			name = v
		} else if v, ok := strings.CutPrefix(f, "duration="); ok {
			d, _ = time.ParseDuration(v)
		}
	}
	if l.byOp == nil {
		l.byOp = map[string]time.Duration{}
	}
	l.total += d
	l.byOp[name] += d
	select {
	case l.seen <- struct{}{}:
	default:
	}
}

// take returns the ops' total time since the last take, and that of the
// op named name, and starts counting again. It waits (up to 5 s) for a
// line of that op: simnode logs it before the client has its result, but
// the line may still be in the pipe.
func (l *opLog) take(name string) (total, op time.Duration) {
	deadline := time.After(5 * time.Second)
	for {
		l.mu.Lock()
		if _, ok := l.byOp[name]; ok {
			total, op = l.total, l.byOp[name]
			l.total, l.byOp = 0, nil
			l.mu.Unlock()
			return total, op
		}
		l.mu.Unlock()
		select {
		case <-l.seen:
		case <-deadline:
			return 0, 0
		}
	}
}

// reset forgets what was logged so far.
func (l *opLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total, l.byOp = 0, nil
}
