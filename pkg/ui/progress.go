package ui

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"sigs.k8s.io/swdt/pkg/redact"
)

// Progress shows transfers while status lines keep coming, from any number
// of goroutines: a bar per transfer on a terminal, and on anything else one
// plain line when a transfer starts and one when it completes. Status lines
// written while bars run are printed above them.
type Progress struct {
	u    *UI
	bars bool
	// heartbeat is how often a transfer prints where it is when there
	// are no bars.
	heartbeat time.Duration
	// ticks, when not nil, times the heartbeats instead of a ticker of
	// heartbeat (a clock the tests control).
	ticks <-chan time.Time
	mu    sync.Mutex
	p     *mpb.Progress
	// active counts transfers whose bar is not finished; the bar container
	// is shut down when it drops to zero so that later status lines print
	// normally.
	active int
	// stamp puts the time of day before every status line.
	stamp bool
}

// Timestamps starts every later status line with the time of day
// (15:04:05), for output that runs for hours (--watch).
func (p *Progress) Timestamps() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stamp = true
}

// NewProgress returns a Progress writing to the UI's stderr. Bars are used
// only when stderr is a terminal.
func (u *UI) NewProgress() *Progress {
	return &Progress{u: u, bars: isTerminal(u.err), heartbeat: 10 * time.Second}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Step reports progress on one node, as UI.Step does.
func (p *Progress) Step(node, format string, args ...any) {
	p.line(color.FgCyan, "▶", fmt.Sprintf("node %s: %s", node, fmt.Sprintf(format, args...)))
}

// Note reports progress that concerns no single node.
func (p *Progress) Note(format string, args ...any) {
	p.line(color.FgCyan, "▶", fmt.Sprintf(format, args...))
}

// Warn reports a problem that does not stop swdt, as UI.Warn does.
func (p *Progress) Warn(format string, args ...any) {
	p.line(color.FgYellow, "!", "warning: "+fmt.Sprintf(format, args...))
}

func (p *Progress) line(attr color.Attribute, symbol, msg string) {
	if p.u.colorErr {
		symbol = paint(attr, symbol)
	}
	msg = strings.ReplaceAll(strings.TrimRight(clean(redact.URLs(msg)), "\n"), "\n", "\n  ")
	p.mu.Lock()
	defer p.mu.Unlock()
	text := symbol + " " + msg + "\n"
	if p.stamp {
		text = time.Now().Format(time.TimeOnly) + " " + text
	}
	if p.p != nil {
		_, _ = p.p.Write([]byte(text))
		return
	}
	_, _ = io.WriteString(p.u.err, text)
}

// Transfer is one file being sent or fetched.
type Transfer struct {
	p       *Progress
	label   string
	total   int64
	started time.Time
	bar     *mpb.Bar
	once    sync.Once
	mu      sync.Mutex
	current int64
	// last is when Update was last called, for the bar's moving rate.
	last time.Time
	// stop ends the heartbeat; beaten is closed when it has ended.
	stop   chan struct{}
	beaten chan struct{}
}

// Transfer starts showing a transfer of total bytes (total <= 0 when
// unknown). Call Update with the bytes done so far; the transfer ends by
// itself when they reach total, or when End is called.
func (p *Progress) Transfer(label string, total int64) *Transfer {
	label = clean(redact.URLs(label))
	t := &Transfer{p: p, label: label, total: total, started: time.Now(), stop: make(chan struct{})}
	t.last = t.started
	if !p.bars {
		size := ""
		if total > 0 {
			size = ": " + Bytes(total)
		}
		p.line(color.FgCyan, "▶", label+size)
		t.beaten = make(chan struct{})
		go t.beat()
		return t
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p == nil {
		p.p = mpb.New(mpb.WithOutput(p.u.err), mpb.WithWidth(40), mpb.WithRefreshRate(150*time.Millisecond))
	}
	p.active++
	t.bar = p.p.AddBar(max(total, 0),
		mpb.PrependDecorators(decor.Name(label, decor.WCSyncSpaceR)),
		mpb.AppendDecorators(
			decor.Counters(decor.SizeB1024(0), "% .1f / % .1f", decor.WCSyncSpace),
			decor.OnComplete(decor.Percentage(decor.WCSyncSpace), " done"),
			decor.OnComplete(decor.EwmaSpeed(decor.SizeB1024(0), "% .1f", 30, decor.WCSyncSpace), ""),
			decor.OnComplete(decor.EwmaETA(decor.ET_STYLE_MMSS, 30, decor.WCSyncSpace), ""),
		),
	)
	return t
}

// Update reports done bytes so far.
func (t *Transfer) Update(done int64) {
	t.mu.Lock()
	t.current = done
	now := time.Now()
	since := now.Sub(t.last)
	t.last = now
	t.mu.Unlock()
	if t.bar != nil {
		t.bar.EwmaSetCurrent(done, since)
	}
	if t.total > 0 && done >= t.total {
		t.End()
	}
}

// End finishes the transfer: a bar that did not reach its total is left
// where it stopped (the summary says why). Calling End again does nothing.
func (t *Transfer) End() {
	t.once.Do(func() {
		close(t.stop)
		if t.beaten != nil {
			// No heartbeat after the end.
			<-t.beaten
		}
		t.mu.Lock()
		done := t.current
		t.mu.Unlock()
		if t.bar == nil {
			if t.total <= 0 || done >= t.total {
				elapsed := time.Since(t.started)
				t.p.line(color.FgGreen, "✔", fmt.Sprintf("%s: %s in %s (%s/s)", t.label, Bytes(done), elapsed.Round(time.Millisecond), Bytes(rate(done, elapsed))))
			}
			return
		}
		if t.total <= 0 && done > 0 {
			t.bar.SetTotal(-1, true)
		} else if !t.bar.Completed() {
			t.bar.Abort(false)
		}
		t.bar.Wait()
		t.p.mu.Lock()
		defer t.p.mu.Unlock()
		t.p.active--
		if t.p.active == 0 {
			// Status lines wait (on mu) until the bars are drawn for the
			// last time, then print normally.
			t.p.p.Wait()
			t.p.p = nil
		}
	})
}

// beat prints, every heartbeat until End, how far the transfer is and how
// fast it moved since the last beat: a stalled link shows as 0 B/s.
func (t *Transfer) beat() {
	defer close(t.beaten)
	ticks := t.p.ticks
	if ticks == nil {
		tick := time.NewTicker(t.p.heartbeat)
		defer tick.Stop()
		ticks = tick.C
	}
	prev, prevAt := int64(0), t.started
	for {
		select {
		case <-t.stop:
			return
		case now := <-ticks:
			t.mu.Lock()
			done := t.current
			t.mu.Unlock()
			of := ""
			if t.total > 0 {
				of = fmt.Sprintf(" of %s (%d%%)", Bytes(t.total), done*100/t.total)
			}
			t.p.line(color.FgCyan, "▶", fmt.Sprintf("%s: %s%s after %s, %s/s now",
				t.label, Bytes(done), of, now.Sub(t.started).Round(time.Second), Bytes(rate(done-prev, now.Sub(prevAt)))))
			prev, prevAt = done, now
		}
	}
}

func rate(n int64, d time.Duration) int64 {
	if d <= 0 {
		return n
	}
	return int64(float64(n) / d.Seconds())
}

// Bytes formats a byte count for people: 512 B, 1.5 KiB, 45.2 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for v := n / unit; v >= unit; v /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
