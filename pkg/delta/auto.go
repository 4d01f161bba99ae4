package delta

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// Mode is the --compress setting: auto (the level follows the link), off,
// or a fixed level.
type Mode struct {
	// Auto picks each chunk's level from the link rate a Meter observes.
	Auto bool
	// Level is the fixed level when Auto is false (LevelOff: no
	// compression, and no patches either).
	Level Level
}

// ParseMode reads auto, off or a level from 1 to 4.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "auto", "":
		return Mode{Auto: true}, nil
	case "off":
		return Mode{Level: LevelOff}, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < int(LevelFastest) || n > int(LevelBest) {
		return Mode{}, fmt.Errorf("compression %q: want auto, off or a level from 1 (fastest) to 4 (smallest)", s)
	}
	return Mode{Level: Level(n)}, nil
}

func (m Mode) String() string {
	switch {
	case m.Auto:
		return "auto"
	case m.Level == LevelOff:
		return "off"
	}
	return strconv.Itoa(int(m.Level))
}

// Chooser returns the function Compress asks for each chunk's level.
func (m Mode) Chooser(meter *Meter) func() Level {
	if !m.Auto {
		return func() Level { return m.Level }
	}
	return func() Level { return AutoLevel(meter.LinkRate()) }
}

// Link rates (bytes/s of encoded data) where auto changes level. Above
// offAbove compression does not pay: decoding on the node runs after the
// upload, at a few hundred MB/s, and saves less than it costs once the
// link moves tens of MB/s (a 1 Gbit/s LAN or loopback).
const (
	offAbove     = 40 << 20
	fastestAbove = 20 << 20
	betterBelow  = 2 << 20
)

// AutoLevel is auto's level for a link that moves rate bytes/s; ok false
// (not measured yet) gives the fastest level, which costs little where
// compression turns out not to pay and saves at once where it does.
func AutoLevel(rate float64, ok bool) Level {
	switch {
	case !ok:
		return LevelFastest
	case rate >= offAbove:
		return LevelOff
	case rate >= fastestAbove:
		return LevelFastest
	case rate >= betterBelow:
		return LevelDefault
	}
	return LevelBetter
}

// localRTT is the round-trip time under which auto takes a link for a
// local network (loopback, a LAN, one cloud region): fast enough that
// files are sent as they are. Encoding and decoding on the node would
// cost more than the bytes saved; a patch saves a little when the two
// builds are alike and costs several times the plain upload when they
// are not (it indexes the old build, then sends the new one as inserts).
const localRTT = 5 * time.Millisecond

// Encodes reports whether files are sent encoded (compressed, or as a
// patch) rather than as they are on a link whose round-trip time is rtt
// (ok false: not measured, which encodes).
func (m Mode) Encodes(rtt time.Duration, ok bool) bool {
	switch {
	case !m.Auto:
		return m.Level != LevelOff
	case ok && rtt < localRTT:
		return false
	}
	return true
}

// inFlight is what the SFTP client reads ahead before the server has
// acknowledged anything (pkg/sftp: 64 requests of 32 KiB): reads show the
// link's pace only after it.
const inFlight = 2<<20 + 512<<10

// Meter wraps the reader an upload takes its bytes from and measures the
// link: the rate at which the uploader takes bytes, not counting the time
// the link sat idle waiting for the encoder. A wait counts as idle only
// beyond the time the bytes in flight take to drain at the rate measured
// so far: while the uploader waits, the link still moves what it was
// given, and counting that as idle would take the link for a faster one.
type Meter struct {
	r   io.Reader
	now func() time.Time

	mu      sync.Mutex
	n       int64
	idle    time.Duration // since startAt
	startAt time.Time     // when n first passed inFlight
	startN  int64
}

// NewMeter measures reads from r.
func NewMeter(r io.Reader) *Meter { return &Meter{r: r, now: time.Now} }

// Read reads from the wrapped reader; the time it blocks is time the
// uploader waited for the encoder.
func (m *Meter) Read(p []byte) (int, error) {
	t := m.now()
	n, err := m.r.Read(p)
	d := m.now().Sub(t)
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.startAt.IsZero() {
		if rate, ok := m.rate(t); ok {
			drain := time.Duration(float64(inFlight) / rate * float64(time.Second))
			m.idle += max(d-drain, 0)
		}
	}
	m.n += int64(n)
	if m.startAt.IsZero() && m.n >= inFlight {
		m.startAt, m.startN = m.now(), m.n
	}
	return n, err
}

// LinkRate is the bytes/s the link took since the read-ahead filled, not
// counting the time it sat idle waiting for the encoder; ok is false
// until 1 MiB more than the read-ahead went through.
func (m *Meter) LinkRate() (rate float64, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.startAt.IsZero() || m.n-m.startN < 1<<20 {
		return 0, false
	}
	return m.rate(m.now())
}

// rate is the link's rate up to now, once anything went through since
// the read-ahead filled; m.mu is held.
func (m *Meter) rate(now time.Time) (float64, bool) {
	busy := now.Sub(m.startAt) - m.idle
	if busy <= 0 || m.n == m.startN {
		return 0, false
	}
	return float64(m.n-m.startN) / busy.Seconds(), true
}
