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

// Watcher watches local source files for --watch.
type Watcher struct {
	w        *fsnotify.Watcher
	byPath   map[string][]string
	debounce time.Duration
	// OnEvent, when set, is told the names whose file changed as soon as
	// it changes, before the debounce: work the change will need can
	// start (it must not block). Set it before Run.
	OnEvent func(names []string)
}

// NewWatcher starts watching local source files (provisioner name -> path)
// at once, so that a change made before Run (for example during the first
// run of --watch) is not lost. Close it when done.
//
// Directories are watched, not files, because builds often replace a file
// by renaming a new one over it, which ends a watch on the file itself.
func NewWatcher(sources map[string]string, debounce time.Duration) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch sources: %w", err)
	}
	byPath := map[string][]string{}
	dirs := map[string]bool{}
	for name, p := range sources {
		abs, err := filepath.Abs(p)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		byPath[abs] = append(byPath[abs], name)
		dirs[filepath.Dir(abs)] = true
	}
	for dir := range dirs {
		if err := w.Add(dir); err != nil {
			w.Close()
			return nil, fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	return &Watcher{w: w, byPath: byPath, debounce: debounce}, nil
}

// Sources counts the watched source files.
func (wt *Watcher) Sources() int { return len(wt.byPath) }

// Close stops watching.
func (wt *Watcher) Close() error { return wt.w.Close() }

// Run calls fn with the names whose file changed, once the file has been
// quiet for the debounce period and its size and modification time no
// longer move (a linker may write in bursts). fn runs on Run's goroutine;
// changes seen while it runs are batched for the next call. Run returns
// when ctx is done.
func (wt *Watcher) Run(ctx context.Context, fn func(ctx context.Context, names []string)) error {
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
		case err, ok := <-wt.w.Errors:
			if !ok {
				return nil
			}
			return fmt.Errorf("watch sources: %w", err)
		case ev, ok := <-wt.w.Events:
			if !ok {
				return nil
			}
			if _, watched := wt.byPath[ev.Name]; !watched || ev.Op == fsnotify.Chmod {
				continue
			}
			waiting[ev.Name] = &pending{last: time.Now(), stat: stamp(ev.Name)}
			timer.Reset(wt.debounce)
			if wt.OnEvent != nil {
				wt.OnEvent(wt.byPath[ev.Name])
			}
		case <-timer.C:
			var ready []string
			for p, pend := range waiting {
				now := stamp(p)
				switch {
				case time.Since(pend.last) < wt.debounce:
				case !now.exists:
					// Deleted, or mid-replace: wait for the next event.
					delete(waiting, p)
				case now != pend.stat:
					pend.stat, pend.last = now, time.Now()
				default:
					ready = append(ready, wt.byPath[p]...)
					delete(waiting, p)
				}
			}
			if len(waiting) > 0 {
				timer.Reset(wt.debounce)
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
