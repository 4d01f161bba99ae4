package ui

import (
	"context"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// WindowSize is a terminal's size in characters.
type WindowSize struct {
	Width, Height int
}

// Terminal is the user's terminal, for a remote shell (swdt ssh): its
// size, its changes, and raw mode, in which every key (Ctrl-C included)
// reaches the remote side as typed.
type Terminal struct {
	in  *os.File
	out *os.File
}

// Terminal returns the terminal swdt runs in when both in and the UI's
// stdout are one, else nil (a pipe, a test's buffer).
func (u *UI) Terminal(in io.Reader) *Terminal {
	fi, ok := in.(*os.File)
	fo, ok2 := u.out.(*os.File)
	if !ok || !ok2 || !term.IsTerminal(int(fi.Fd())) || !term.IsTerminal(int(fo.Fd())) {
		return nil
	}
	return &Terminal{in: fi, out: fo}
}

// Size is the terminal's current size.
func (t *Terminal) Size() (WindowSize, error) {
	w, h, err := term.GetSize(int(t.out.Fd()))
	if err != nil {
		return WindowSize{}, fmt.Errorf("read the terminal's size: %w", err)
	}
	return WindowSize{Width: w, Height: h}, nil
}

// Raw puts the terminal in raw mode and returns what puts it back.
func (t *Terminal) Raw() (restore func(), err error) {
	st, err := term.MakeRaw(int(t.in.Fd()))
	if err != nil {
		return nil, fmt.Errorf("put the terminal in raw mode: %w", err)
	}
	return func() { _ = term.Restore(int(t.in.Fd()), st) }, nil
}

// Resizes delivers the terminal's size after each change until ctx ends
// (see watchResize for how changes are noticed on each system).
func (t *Terminal) Resizes(ctx context.Context) <-chan WindowSize {
	out := make(chan WindowSize, 1)
	changed := watchResize(ctx)
	go func() {
		defer close(out)
		last, _ := t.Size()
		for {
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
			now, err := t.Size()
			if err != nil || now == last {
				continue
			}
			last = now
			select {
			case out <- now:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
