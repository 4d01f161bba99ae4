package provision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher watches local source files for --watch.
type Watcher struct {
	w        *fsnotify.Watcher
	byPath   map[string][]string
	debounce time.Duration
	// dirs are the folders of the sources; watched the folders watched:
	// each source's own, or while that does not exist yet (no build
	// made), its nearest existing parent.
	dirs    map[string]bool
	watched map[string]bool
	// changed are sources Run takes as changed when it starts.
	changed []string
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
// by renaming a new one over it, which ends a watch on the file itself. A
// source whose folder does not exist yet (a build output folder before
// the first build) is waited for: its nearest existing parent is watched,
// and each folder on the way is watched as it is created.
func NewWatcher(sources map[string]string, debounce time.Duration) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch sources: %w", err)
	}
	wt := &Watcher{w: w, byPath: map[string][]string{}, debounce: debounce, dirs: map[string]bool{}, watched: map[string]bool{}}
	for name, p := range sources {
		abs, err := filepath.Abs(p)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("watch %s: %w", p, err)
		}
		wt.byPath[abs] = append(wt.byPath[abs], name)
		wt.dirs[filepath.Dir(abs)] = true
	}
	if _, err := wt.watchDirs(); err != nil {
		w.Close()
		return nil, err
	}
	return wt, nil
}

// watchDirs watches each source's folder, or the nearest existing parent
// of one that does not exist yet, and returns the sources that exist in
// folders it has just started to watch: they may have been written
// before the watch began.
func (wt *Watcher) watchDirs() ([]string, error) {
	var appeared []string
	for dir := range wt.dirs {
		// A folder made between the look and the watch on its parent
		// sends no event: look again until the deepest folder that
		// exists is watched.
		for {
			at, err := deepestFolder(dir)
			if err != nil {
				return nil, err
			}
			if wt.watched[at] {
				break
			}
			if err := wt.w.Add(at); err != nil {
				return nil, fmt.Errorf("watch %s: %w", at, err)
			}
			wt.watched[at] = true
			if at != dir {
				continue
			}
			for p := range wt.byPath {
				if filepath.Dir(p) == dir && stamp(p).exists {
					appeared = append(appeared, p)
				}
			}
			break
		}
	}
	sort.Strings(appeared)
	return appeared, nil
}

// deepestFolder is dir when it exists, else its nearest existing parent.
func deepestFolder(dir string) (string, error) {
	at := dir
	for {
		if fi, err := os.Stat(at); err == nil && fi.IsDir() {
			return at, nil
		}
		parent := filepath.Dir(at)
		if parent == at {
			return "", fmt.Errorf("watch %s: no folder of its path exists", dir)
		}
		at = parent
	}
}

// awaited reports whether dir is a folder on the way to a source's
// folder that is not watched yet.
func (wt *Watcher) awaited(dir string) bool {
	if wt.watched[dir] {
		return false
	}
	for d := range wt.dirs {
		if d == dir || strings.HasPrefix(d, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Changed marks the source at path as changed, for one that may have
// been written before the watch began (a first build). Call it before
// Run.
func (wt *Watcher) Changed(path string) {
	if abs, err := filepath.Abs(path); err == nil {
		wt.changed = append(wt.changed, abs)
	}
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
	for _, p := range wt.changed {
		if _, watched := wt.byPath[p]; watched {
			waiting[p] = &pending{last: time.Now(), stat: stamp(p)}
			timer.Reset(wt.debounce)
		}
	}
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
			changed := []string{ev.Name}
			if ev.Op.Has(fsnotify.Remove) || ev.Op.Has(fsnotify.Rename) {
				if wt.watched[ev.Name] {
					// A watched folder went (make clean): its watch went
					// with it; wait for it again from its parent.
					delete(wt.watched, ev.Name)
					if _, err := wt.watchDirs(); err != nil {
						return err
					}
				}
			}
			if ev.Op.Has(fsnotify.Create) && wt.awaited(ev.Name) {
				// A folder on the way to a source's: watch on from there.
				appeared, err := wt.watchDirs()
				if err != nil {
					return err
				}
				changed = appeared
			}
			for _, p := range changed {
				if _, watched := wt.byPath[p]; !watched || ev.Op == fsnotify.Chmod {
					continue
				}
				waiting[p] = &pending{last: time.Now(), stat: stamp(p)}
				timer.Reset(wt.debounce)
				if wt.OnEvent != nil {
					wt.OnEvent(wt.byPath[p])
				}
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
