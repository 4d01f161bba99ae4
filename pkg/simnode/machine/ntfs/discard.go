package ntfs

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// Deleting a file's data. NTFS frees a deleted file's clusters by marking
// them free in the volume's bitmap, a few runs whatever the file's size,
// so deleting a kubelet.exe costs about what deleting a small file does.
// The host's file systems free a file's pages or blocks one by one when
// its last name goes: on tmpfs, 7 ms for 50 MB and 36-48 ms for 256 MB, a
// cost a swap that clears its old backup would pay on no Windows node. So
// the volume deletes a file by moving it into the machine's discard
// folder (beside fs/, never seen from the node), which is as quick as a
// rename, and frees it there in the background; a file a rename replaces
// is linked there first, so the rename stays one atomic step. The host's work is not
// hidden: it is done on the same cores, after the delete has returned.

// discards frees discarded files, one at a time, in a goroutine that runs
// while there are any.
type discards struct {
	mu      sync.Mutex
	dir     string
	next    int
	queue   []string
	running bool
	idle    *sync.Cond
}

// DiscardFolder is where the volume whose host root is root keeps the
// files deleted on it until they are freed: beside root, never seen from
// the node. It is empty once every deleted file is freed.
func DiscardFolder(root string) string {
	return filepath.Join(filepath.Dir(root), "discarded")
}

func newDiscards(root string) *discards {
	d := &discards{dir: DiscardFolder(root)}
	d.idle = sync.NewCond(&d.mu)
	// What a simnode that stopped had still to free.
	_ = os.RemoveAll(d.dir)
	return d
}

// remove deletes the host file host: moved into the discard folder and
// freed in the background, or removed where it is when it cannot be
// moved. The name is gone when remove returns.
func (d *discards) remove(host string) error {
	to, err := d.place(host, os.Rename)
	if err != nil {
		return os.Remove(host)
	}
	d.enqueue(to)
	return nil
}

// replacing prepares host, a file a rename is about to replace: it is
// linked into the discard folder, so that the rename drops a name and not
// the data, which is freed in the background. done(true), once the rename
// succeeded, queues it; done(false) takes the link back. Where no link can
// be made, the rename frees the data itself, as it always did.
func (d *discards) replacing(host string) (done func(replaced bool)) {
	to, err := d.place(host, os.Link)
	if err != nil {
		return func(bool) {}
	}
	return func(replaced bool) {
		if !replaced {
			_ = os.Remove(to)
			return
		}
		d.enqueue(to)
	}
}

// place moves or links (put) host to a new name in the discard folder,
// which it makes when missing.
func (d *discards) place(host string, put func(from, to string) error) (string, error) {
	d.mu.Lock()
	d.next++
	to := filepath.Join(d.dir, strconv.Itoa(d.next))
	d.mu.Unlock()
	err := put(host, to)
	if err != nil && os.MkdirAll(d.dir, 0o700) == nil {
		err = put(host, to)
	}
	return to, err
}

// enqueue has the file at to freed in the background.
func (d *discards) enqueue(to string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queue = append(d.queue, to)
	if !d.running {
		d.running = true
		go d.free()
	}
}

func (d *discards) free() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for len(d.queue) > 0 {
		p := d.queue[0]
		d.queue = d.queue[1:]
		d.mu.Unlock()
		_ = os.Remove(p)
		d.mu.Lock()
	}
	d.running = false
	d.idle.Broadcast()
}

// wait returns once every file discarded so far is freed.
func (d *discards) wait() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for d.running {
		d.idle.Wait()
	}
}
