package ntfs

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"time"
)

// Markers are byte strings that, found anywhere in a service's binary when
// it starts, change how the simulated service behaves.
const (
	// MarkerCrashOnStart: the service reaches Running, then exits with
	// code 1 after Delays.CrashAfter and logs "terminated unexpectedly".
	// It also crashes a service that has it as one of its arguments, as
	// a program given a flag it rejects exits.
	MarkerCrashOnStart = "SIMNODE-CRASH-ON-START"
	// MarkerHangOnStop: a stop leaves the service StopPending until its
	// process is killed.
	MarkerHangOnStop = "SIMNODE-HANG-ON-STOP"
	// MarkerExitOnStop: a stop ends with the process exiting before it
	// reports Stopped: the service control manager counts that as a
	// failure and runs the service's failure actions.
	MarkerExitOnStop = "SIMNODE-EXIT-ON-STOP"
	// MarkerWinsNoPipe: the service runs without creating its named pipes,
	// like rancher/wins v0.16 and later.
	MarkerWinsNoPipe = "SIMNODE-WINS-NO-PIPE"
	// MarkerWinsHang: every command run with the wins binary (cli, srv)
	// hangs until it is killed, like a wins client whose server accepts
	// the pipe connection and never answers.
	MarkerWinsHang = "SIMNODE-WINS-HANG"
	// MarkerKubelet, followed by a version and a ';', makes a service
	// binary a simulated kubelet: while its service process lives the
	// machine's Daemon (pkg/simnode/kubelet) plays it.
	MarkerKubelet = "SIMNODE-KUBELET-VERSION="
)

// markerPrefix begins every marker.
const markerPrefix = "SIMNODE-"

var allMarkers = []string{MarkerCrashOnStart, MarkerHangOnStop, MarkerWinsNoPipe, MarkerKubelet, MarkerExitOnStop}

type markerKey struct {
	path  string
	size  int64
	mtime time.Time
}

// markerCache remembers scan results by file identity, so that starting a
// 200 MB service twice reads it once.
type markerCache map[markerKey]map[string]bool

// scanMarkers streams the file once, with a small overlap between chunks so
// a marker spanning two reads is still found.
func (c markerCache) scan(hostPath string) (map[string]bool, error) {
	f, err := os.Open(hostPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	key := markerKey{hostPath, fi.Size(), fi.ModTime()}
	if found, ok := c[key]; ok {
		return found, nil
	}
	found, err := findMarkers(f)
	if err != nil {
		return nil, err
	}
	if len(c) > 64 {
		clear(c)
	}
	c[key] = found
	return found, nil
}

func findMarkers(r io.Reader) (map[string]bool, error) {
	const overlap = 32 // longer than any marker
	found := map[string]bool{}
	buf := make([]byte, 256*1024+overlap)
	keep := 0
	for {
		n, err := io.ReadFull(r, buf[keep:])
		window := buf[:keep+n]
		markersIn(found, window)
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return found, nil
		}
		if err != nil {
			return nil, err
		}
		keep = min(overlap, len(window))
		copy(buf, window[len(window)-keep:])
	}
}

// markersIn adds to found the markers in b, in one pass for the prefix
// every marker shares.
func markersIn(found map[string]bool, b []byte) {
	for rest := b; ; {
		i := bytes.Index(rest, []byte(markerPrefix))
		if i < 0 {
			return
		}
		for _, m := range allMarkers {
			if bytes.HasPrefix(rest[i:], []byte(m)) {
				found[m] = true
			}
		}
		rest = rest[i+1:]
	}
}

// markerStream finds the markers of a file as it is written from its
// start, in order (a decode, a copy), so that starting the program later
// does not read it again: the scan runs beside the writer's other work.
type markerStream struct {
	found map[string]bool
	// tail is the end of what was written, shorter than any marker: a
	// marker may start there and end in the next write.
	tail []byte
	// n counts the bytes seen: the markers are the file's only when it
	// has that size (nothing wrote it around the stream).
	n int64
}

func newMarkerStream() *markerStream { return &markerStream{found: map[string]bool{}} }

// markerOverlap is how far a marker (at most 32 bytes) spanning two
// writes reaches into each.
const markerOverlap = 31

// skip follows n bytes (more than head and tail together) known to hold
// no marker, head being the first markerOverlap of them and tail the
// last: only a marker that crosses their edges can be found.
func (s *markerStream) skip(head, tail []byte, n int64) {
	s.write(head)
	s.tail = s.tail[:0]
	s.write(tail)
	s.n += n - int64(len(head)+len(tail))
}

func (s *markerStream) write(p []byte) {
	// A marker (at most 32 bytes) spanning two writes starts in the
	// last 31 bytes of the first.
	const overlap = markerOverlap
	s.n += int64(len(p))
	head := append(s.tail, p[:min(len(p), overlap)]...)
	markersIn(s.found, head)
	markersIn(s.found, p)
	if len(p) >= overlap {
		s.tail = append(s.tail[:0], p[len(p)-overlap:]...)
	} else {
		s.tail = append(s.tail[:0], head[max(0, len(head)-overlap):]...)
	}
}

// record keeps found as the markers of the file at hostPath as fi
// describes it.
func (c markerCache) record(hostPath string, fi fs.FileInfo, found map[string]bool) {
	if len(c) > 64 {
		clear(c)
	}
	c[markerKey{hostPath, fi.Size(), fi.ModTime()}] = found
}

// moved follows a rename: the file keeps its size and time.
func (c markerCache) moved(fromHost, toHost string) {
	for k, v := range c {
		if k.path == fromHost {
			delete(c, k)
			k.path = toHost
			c[k] = v
		}
	}
}

// CachedMarkers returns the markers the machine knows p holds without
// reading it (found as it was written, followed through renames), or nil.
func (v *Volume) CachedMarkers(p string) map[string]bool {
	w, err := ParsePath(p)
	if err != nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	host, _, err := Resolve(v.root, w)
	if err != nil {
		return nil
	}
	fi, err := os.Stat(host)
	if err != nil {
		return nil
	}
	return v.markers[markerKey{host, fi.Size(), fi.ModTime()}]
}

// ScanMarkersLocked returns the markers in the file at host (a host path
// Resolve returned), reading it only when the cache does not know it.
func (v *Volume) ScanMarkersLocked(host string) (map[string]bool, error) { return v.markers.scan(host) }
