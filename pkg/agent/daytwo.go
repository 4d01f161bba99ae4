package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/winos"
)

// The day-two ops: swdt exec and swdt logs.
var dayTwoOps = []entry{
	handleStreaming(ops.Exec, execProgram),
	handle(ops.ServiceLogs, serviceLogs),
}

// execProgram runs the user's program with its arguments as separate
// arguments (never through a shell), its output passed straight through.
func execProgram(ctx context.Context, w winos.OS, stdout, stderr io.Writer, req ops.ExecRequest) (ops.ExecResponse, error) {
	if len(req.Command) == 0 || strings.TrimSpace(req.Command[0]) == "" {
		return ops.ExecResponse{}, Fail(ops.KindBadRequest, "no program to run")
	}
	if req.TimeoutMs <= 0 {
		return ops.ExecResponse{}, Fail(ops.KindBadRequest, "timeoutMs must be positive, not %d", req.TimeoutMs)
	}
	limit := time.Duration(req.TimeoutMs) * time.Millisecond
	cmd := winos.Command{Path: req.Command[0], Args: req.Command[1:], SearchPath: true, Stdout: stdout, Stderr: stderr}
	res, expired, err := runBounded(ctx, w, limit, cmd)
	switch {
	case expired:
		return ops.ExecResponse{ExitCode: res.ExitCode, TimedOut: true}, nil
	case winos.Code(err) == winos.ErrFileNotFound || winos.Code(err) == winos.ErrPathNotFound:
		return ops.ExecResponse{}, Fail(ops.KindNotFound, "%s: no such program on the node (looked up in sshd's PATH); give its full path", req.Command[0])
	case err != nil:
		return ops.ExecResponse{}, fmt.Errorf("run %s: %w", req.Command[0], err)
	}
	return ops.ExecResponse{ExitCode: res.ExitCode}, nil
}

// Bounds of one service-logs read, so that a follow-up poll of a log
// that grows fast, or a first read of a huge one, stays small.
const (
	logTailBytes  = 1 << 20
	logChunkBytes = 1 << 20
	maxLogLines   = 10000
	maxLogEvents  = 200
)

// serviceLogs reads a service's log file (from where the last read ended,
// or its last lines) and the service control manager's events about it.
func serviceLogs(ctx context.Context, w winos.OS, req ops.ServiceLogsRequest) (ops.ServiceLogsResponse, error) {
	if req.Service == "" {
		return ops.ServiceLogsResponse{}, Fail(ops.KindBadRequest, "no service named")
	}
	svc, err := w.Service(req.Service)
	if err != nil {
		return ops.ServiceLogsResponse{}, err
	}
	resp := ops.ServiceLogsResponse{Service: svc.Name, Status: string(svc.Status), Now: time.Now().UTC(), Lines: []string{}, Events: []ops.ServiceEvent{}}
	resp.LogFile = serviceLogFile(w, svc)
	if resp.LogFile != "" {
		lines, offset, err := readLog(w, resp.LogFile, req.Offset, min(max(req.Lines, 0), maxLogLines))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			resp.LogError = "the log file does not exist (yet)"
		case err != nil:
			resp.LogError = err.Error()
		default:
			resp.Lines, resp.Offset = lines, offset
		}
	}
	if req.MaxEvents > 0 {
		events, err := w.ServiceEvents(ctx, svc.Name, req.Since, min(req.MaxEvents, maxLogEvents))
		if err != nil {
			if ctx.Err() != nil {
				return resp, err
			}
			resp.EventsError = err.Error()
		} else {
			slices.Reverse(events) // oldest first, as a log reads
			for _, e := range events {
				resp.Events = append(resp.Events, serviceEvent(e))
			}
		}
	}
	return resp, nil
}

// serviceEvent splits an event line of winos.OS.ServiceEvents, its time
// (round-trip format) then a space then the message, into its parts; a
// line without a time is all message.
func serviceEvent(line string) ops.ServiceEvent {
	if stamp, msg, ok := strings.Cut(line, " "); ok {
		if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
			return ops.ServiceEvent{Time: t.UTC(), Message: msg}
		}
	}
	return ops.ServiceEvent{Message: line}
}

// serviceLogFile is the file a service logs to: the --log-file (or
// klog's --log_file, or kube-log-runner's -log-file, which comes before
// the program it runs) argument of its command line, else what nssm
// redirects the wrapped program's stderr or stdout to; "" when none.
func serviceLogFile(w winos.OS, svc winos.Service) string {
	args := splitCommandLine(svc.CommandLine)
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "log-file" && name != "log_file") {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		if value != "" {
			return value
		}
	}
	key := `SYSTEM\CurrentControlSet\Services\` + svc.Name + `\Parameters`
	for _, name := range []string{"AppStderr", "AppStdout"} {
		if v, err := w.RegistryValue(key, name); err == nil && v.String != "" {
			return v.String
		}
	}
	return ""
}

// splitCommandLine splits a Windows command line into arguments by the
// rules of CommandLineToArgvW, which undo what CreateService's quoting
// (syscall.EscapeArg) did: white space separates, double quotes group,
// 2n backslashes before a quote are n backslashes and the quote groups,
// 2n+1 are n backslashes and a literal quote, other backslashes are
// literal.
func splitCommandLine(s string) []string {
	var args []string
	var cur strings.Builder
	inQuotes, started := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			n := 0
			for i < len(s) && s[i] == '\\' {
				n++
				i++
			}
			if i < len(s) && s[i] == '"' {
				cur.WriteString(strings.Repeat(`\`, n/2))
				if n%2 == 1 {
					cur.WriteByte('"')
				} else {
					inQuotes = !inQuotes
				}
			} else {
				cur.WriteString(strings.Repeat(`\`, n))
				i--
			}
			started = true
		case c == '"':
			inQuotes = !inQuotes
			started = true
		case (c == ' ' || c == '\t') && !inQuotes:
			if started {
				args = append(args, cur.String())
				cur.Reset()
				started = false
			}
		default:
			cur.WriteByte(c)
			started = true
		}
	}
	if started {
		args = append(args, cur.String())
	}
	return args
}

// readLog reads a log file's whole lines: from offset on (at most
// logChunkBytes) when offset is not negative, else its last n lines. It
// returns them and where the read ended. A file shorter than offset was
// truncated or replaced: it is read from the start.
func readLog(w winos.OS, path string, offset int64, n int) ([]string, int64, error) {
	fi, err := w.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	start, limit := offset, int64(logChunkBytes)
	if offset < 0 {
		start, limit = max(0, fi.Size-logTailBytes), logTailBytes
	} else if offset > fi.Size {
		start = 0
	}
	f, err := w.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if err := skip(f, start); err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	switch i := bytes.LastIndexByte(data, '\n'); {
	case i >= 0:
		// A line still being written is read next time, whole.
		data = data[:i+1]
	case int64(len(data)) < limit:
		data = nil
	}
	end := start + int64(len(data))
	if offset < 0 && start > 0 {
		// The tail starts mid-line.
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\r\n"), "\n")
	if len(data) == 0 {
		lines = nil
	}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, "\r")
	}
	if offset < 0 {
		lines = lines[max(0, len(lines)-n):]
	}
	return lines, end, nil
}

// skip moves r n bytes on: by seeking when it can.
func skip(r io.Reader, n int64) error {
	if n == 0 {
		return nil
	}
	if s, ok := r.(io.Seeker); ok {
		_, err := s.Seek(n, io.SeekStart)
		return err
	}
	_, err := io.CopyN(io.Discard, r, n)
	return err
}
