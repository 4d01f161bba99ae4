package provision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch watches local source files (provisioner name -> path) and calls fn
// with the names whose file changed, once the file has been quiet for
// debounce and its size and modification time no longer move (a linker may
// write in bursts). fn runs on Watch's goroutine; changes seen while it runs
// are batched for the next call. Watch returns when ctx is done.
//
// Directories are watched, not files, because builds often replace a file
// by renaming a new one over it, which ends a watch on the file itself.
func Watch(ctx context.Context, sources map[string]string, debounce time.Duration, fn func(ctx context.Context, names []string)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch sources: %w", err)
	}
	defer w.Close()
	byPath := map[string][]string{}
	dirs := map[string]bool{}
	for name, p := range sources {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("watch %s: %w", p, err)
		}
		byPath[abs] = append(byPath[abs], name)
		dirs[filepath.Dir(abs)] = true
	}
	for dir := range dirs {
		if err := w.Add(dir); err != nil {
			return fmt.Errorf("watch %s: %w", dir, err)
		}
	}

	type pending struct {
		last time.Time
		stat fileStamp
	}
	waiting := map[string]*pending{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			return fmt.Errorf("watch sources: %w", err)
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if _, watched := byPath[ev.Name]; !watched || ev.Op == fsnotify.Chmod {
				continue
			}
			waiting[ev.Name] = &pending{last: time.Now(), stat: stamp(ev.Name)}
			timer.Reset(debounce)
		case <-timer.C:
			var ready []string
			for p, pend := range waiting {
				now := stamp(p)
				switch {
				case time.Since(pend.last) < debounce:
				case !now.exists:
					// Deleted, or mid-replace: wait for the next event.
					delete(waiting, p)
				case now != pend.stat:
					pend.stat, pend.last = now, time.Now()
				default:
					ready = append(ready, byPath[p]...)
					delete(waiting, p)
				}
			}
			if len(waiting) > 0 {
				timer.Reset(debounce)
			}
			if len(ready) > 0 {
				sort.Strings(ready)
				fn(ctx, ready)
			}
		}
	}
}

type fileStamp struct {
	exists  bool
	size    int64
	modTime time.Time
}

func stamp(p string) fileStamp {
	info, err := os.Stat(p)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, size: info.Size(), modTime: info.ModTime()}
}
