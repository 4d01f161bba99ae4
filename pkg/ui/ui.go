// Package ui is the only place swdt writes to the terminal: data (tables,
// JSON) to stdout, status lines and logs to stderr, with colour only where
// a terminal will show it. Everything it writes has the credentials of
// URLs redacted (see pkg/redact), whoever built the message.
//
// Commands build one UI from the global flags and hand it down; workflows
// report through it and never write to os.Stdout or os.Stderr themselves.
// It must never decide what to do, only how to show it.
package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/fatih/color"
	"github.com/mattn/go-isatty"

	"sigs.k8s.io/swdt/pkg/redact"
)

// Format is how results are printed on stdout.
type Format string

const (
	// FormatText prints human tables and lines.
	FormatText Format = "text"
	// FormatJSON prints one JSON document for scripts.
	FormatJSON Format = "json"
)

// Formats lists the accepted values of -o.
var Formats = []Format{FormatText, FormatJSON}

// ParseFormat checks a -o value.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown output format %q: use text or json", s)
}

// ColorMode says when output is coloured.
type ColorMode int

const (
	// ColorAuto colours a stream only when it is a terminal and NO_COLOR is
	// unset.
	ColorAuto ColorMode = iota
	// ColorNever never colours (--no-color).
	ColorNever
	// ColorAlways colours even when not writing to a terminal.
	ColorAlways
)

// Options configure a UI.
type Options struct {
	// Format is the stdout format; empty means FormatText.
	Format Format
	// Color says when to colour.
	Color ColorMode
	// Verbosity is the -v count: 0 logs warnings and errors, 1 adds info,
	// 2 or more adds debug.
	Verbosity int
}

// UI writes swdt's output. It is safe for concurrent use: nodes run in
// parallel and each line is written whole.
type UI struct {
	mu       sync.Mutex // serialises writes to out and err
	out, err io.Writer
	format   Format
	colorOut bool
	colorErr bool
	logger   *slog.Logger
	// stream is set by a verb that prints more than one JSON document.
	stream bool
}

// New returns a UI writing data to stdout and status to stderr.
func New(stdout, stderr io.Writer, opts Options) *UI {
	format := opts.Format
	if format == "" {
		format = FormatText
	}
	u := &UI{
		out:      stdout,
		err:      stderr,
		format:   format,
		colorOut: useColor(opts.Color, stdout),
		colorErr: useColor(opts.Color, stderr),
	}
	level := slog.LevelWarn
	switch {
	case opts.Verbosity >= 2:
		level = slog.LevelDebug
	case opts.Verbosity == 1:
		level = slog.LevelInfo
	}
	u.logger = slog.New(slog.NewTextHandler(&lockedWriter{mu: &u.mu, w: stderr}, &slog.HandlerOptions{
		Level: level,
		// Status lines carry no timestamps; logs match them.
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	return u
}

// lockedWriter lets the logger share the UI's lock, so log lines and status
// lines never interleave on stderr.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

// Write writes p, with URL credentials redacted: the handler writes a
// whole record at a time.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := io.WriteString(l.w, redact.URLs(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func useColor(mode ColorMode, w io.Writer) bool {
	switch mode {
	case ColorNever:
		return false
	case ColorAlways:
		return true
	}
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Format returns the stdout format chosen with -o.
func (u *UI) Format() Format { return u.format }

// Stream says that the verb prints more than one JSON document (a follow,
// a watch): each is then printed on its own line, as JSON Lines.
func (u *UI) Stream() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.stream = true
}

// Streaming reports whether Stream was called.
func (u *UI) Streaming() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.stream
}

// Out is stdout, for data printed as is (for example a sample file).
func (u *UI) Out() io.Writer { return u.out }

// Passthrough returns stdout and stderr for a remote program's output,
// copied byte for byte as it arrives (swdt exec). Writes to stderr share
// the UI's lock, so they never split a status line.
func (u *UI) Passthrough() (stdout, stderr io.Writer) {
	return u.out, &rawWriter{mu: &u.mu, w: u.err}
}

// rawWriter is lockedWriter without the redaction: a program's own bytes.
type rawWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (r *rawWriter) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.w.Write(p)
}

// Logger returns the -v logger, which writes to stderr.
func (u *UI) Logger() *slog.Logger { return u.logger }

// Step reports progress on one node on stderr:
// "▶ node winworker: staging kubelet.exe".
func (u *UI) Step(node, format string, args ...any) {
	u.status(color.FgCyan, "▶", fmt.Sprintf("node %s: %s", node, fmt.Sprintf(format, args...)))
}

// Success reports something that worked on stderr.
func (u *UI) Success(format string, args ...any) {
	u.status(color.FgGreen, "✔", fmt.Sprintf(format, args...))
}

// Warn reports a problem that does not stop swdt on stderr.
func (u *UI) Warn(format string, args ...any) {
	u.status(color.FgYellow, "!", "warning: "+fmt.Sprintf(format, args...))
}

// Error reports a failure on stderr. Each error is reported once, by the
// command that gives up.
func (u *UI) Error(format string, args ...any) {
	u.status(color.FgRed, "✖", "error: "+fmt.Sprintf(format, args...))
}

func (u *UI) status(attr color.Attribute, symbol, msg string) {
	if u.colorErr {
		symbol = paint(attr, symbol)
	}
	// Continuation lines of a multi-line message line up under the text.
	msg = strings.ReplaceAll(strings.TrimRight(clean(redact.URLs(msg)), "\n"), "\n", "\n  ")
	u.mu.Lock()
	defer u.mu.Unlock()
	fmt.Fprintf(u.err, "%s %s\n", symbol, msg)
}

func paint(attr color.Attribute, s string) string {
	c := color.New(attr)
	c.EnableColor()
	return c.Sprint(s)
}

// Printf writes a line of data to stdout.
func (u *UI) Printf(format string, args ...any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	_, _ = io.WriteString(u.out, clean(redact.URLs(fmt.Sprintf(format, args...))))
}

// Table writes rows under headers to stdout with aligned columns; the
// header row is bold on a colour terminal.
func (u *UI) Table(headers []string, rows [][]string) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			// Cleaned before alignment, which counts what it keeps.
			cells[i] = clean(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	text := redact.URLs(buf.String())
	if u.colorOut {
		// Painted after alignment: escape codes would count as width.
		head, rest, _ := strings.Cut(text, "\n")
		text = paint(color.Bold, strings.TrimRight(head, " ")) + "\n" + rest
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, err := io.WriteString(u.out, text); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// JSONLine writes v to stdout as JSON on one line: one document of a
// stream (JSON Lines).
func (u *UI) JSONLine(v any) error {
	data, err := json.Marshal(v)
	return u.writeJSON(data, err)
}

// JSON writes v to stdout as indented JSON.
func (u *UI) JSON(v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	return u.writeJSON(data, err)
}

// writeJSON writes one encoded document and a newline.
func (u *UI) writeJSON(data []byte, err error) error {
	if err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	// Redacting the encoded text covers every string in the document;
	// "***" needs no escaping.
	if _, err := io.WriteString(u.out, redact.URLs(string(cleanJSON(data)))+"\n"); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}
