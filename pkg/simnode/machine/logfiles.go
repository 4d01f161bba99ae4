package machine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/swdt/internal/winpath"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
)

// Where a service's program writes its log. A service has no console:
// what its process writes to stderr is lost, unless a wrapper redirects
// it or the program opens a log file itself. Two ways SIG Windows nodes
// use are modelled:
//
//   - kube-log-runner.exe (k8s.io/component-base/logs/kube-log-runner, in
//     the Kubernetes node binaries) runs its first argument that is no
//     flag as its child and appends the child's stdout and stderr to its
//     -log-file; it is how upstream runs the kubelet and kube-proxy as
//     services (they take no --log-file since 1.26). It ends when its
//     child ends; killing it leaves the child running (wrappers.go).
//   - containerd started as a service (--run-service) with --log-file
//     appends its log there, beginning with its start.
//
// Both open the file for appending and create it, but not its folder: in
// a folder that does not exist the program exits as it starts
// (kube-log-runner: "failed to create log file"), and the service fails.

// LogRunnerName is kube-log-runner's file name.
const LogRunnerName = "kube-log-runner.exe"

// logRunnerValueFlags are kube-log-runner's flags that take a value.
var logRunnerValueFlags = []string{"log-file", "log-file-size", "log-file-age", "flush-interval"}

// isLogRunner reports whether a service's program is kube-log-runner.
func isLogRunner(binary string) bool {
	return strings.EqualFold(winpath.Base(binary), LogRunnerName)
}

// splitLogRunner splits kube-log-runner's arguments, as Go's flag package
// parses them, into its -log-file ("" for none), the program it runs
// ("" for none) and that program's arguments.
func splitLogRunner(args []string) (logFile, program string, programArgs []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return logFile, args[i+1], args[i+2:]
			}
			return logFile, "", nil
		case len(a) < 2 || a[0] != '-':
			return logFile, a, args[i+1:]
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue && slices.Contains(logRunnerValueFlags, name) && i+1 < len(args) {
			i++
			value = args[i]
		}
		if name == "log-file" {
			logFile = value
		}
	}
	return logFile, "", nil
}

// flagValue is the value of a --name flag in args (--name=value or
// --name value), and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		n, v, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || n != name {
			continue
		}
		if !hasValue && i+1 < len(args) {
			v = args[i+1]
		}
		return v, true
	}
	return "", false
}

// serviceLogLocked opens the log a service's program writes (see
// above): the writer of the output its process writes (nil when that
// goes nowhere), or why the program exits as it starts.
func (m *Machine) serviceLogLocked(svc *Service) (stderr io.Writer, exit string) {
	logFile, what := "", ""
	switch {
	case isLogRunner(svc.BinaryPath):
		logFile, _, _ = splitLogRunner(svc.Args)
		what = "failed to create log file"
	case slices.Contains(svc.Args, "--run-service"):
		logFile, _ = flagValue(svc.Args, "log-file")
		what = "open log file"
	}
	if logFile == "" {
		return nil, ""
	}
	w, err := m.logAppenderLocked(logFile)
	if err != nil {
		return nil, fmt.Sprintf("%s %s: %v", what, logFile, err)
	}
	return w, ""
}

// containerdStarted writes what containerd logs as it starts as a
// service, when its program is containerd.exe.
func containerdStarted(svc *Service, w io.Writer, now time.Time) {
	if w == nil || !strings.EqualFold(winpath.Base(svc.BinaryPath), "containerd.exe") {
		return
	}
	stamp := now.UTC().Format(time.RFC3339Nano)
	fmt.Fprintf(w, "time=%q level=info msg=\"starting containerd\" revision=simnode version=v2.1.4\n", stamp)
	fmt.Fprintf(w, "time=%q level=info msg=serving... address=\"\\\\\\\\.\\\\pipe\\\\containerd-containerd\"\n", stamp)
	fmt.Fprintf(w, "time=%q level=info msg=\"containerd successfully booted in 0.052s\"\n", stamp)
}

// errNoPath is Windows' ERROR_PATH_NOT_FOUND.
var errNoPath = errors.New("The system cannot find the path specified.")

// logAppender appends each write to a file of the machine, as a program
// that opened it for appending does.
type logAppender struct{ host string }

func (l logAppender) Write(p []byte) (int, error) {
	f, err := os.OpenFile(l.host, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(p)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// logAppenderLocked opens the file at p for appending, creating it but
// not its folder, which must exist.
func (m *Machine) logAppenderLocked(p string) (io.Writer, error) {
	w, err := ntfs.ParsePath(p)
	if err != nil {
		return nil, err
	}
	elems := w.Elems()
	if len(elems) == 0 {
		return nil, fmt.Errorf("%s is no file", p)
	}
	dir, err := ntfs.ParsePath(w.Drive() + `:\` + strings.Join(elems[:len(elems)-1], `\`))
	if err != nil {
		return nil, err
	}
	hostDir, _, err := ntfs.Resolve(m.fsRoot, dir)
	if err != nil {
		return nil, errNoPath
	}
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		return nil, errNoPath
	}
	name := elems[len(elems)-1]
	if entries, err := os.ReadDir(hostDir); err == nil {
		for _, de := range entries {
			if strings.EqualFold(de.Name(), name) {
				name = de.Name()
			}
		}
	}
	a := logAppender{host: filepath.Join(hostDir, name)}
	if _, err := a.Write(nil); err != nil {
		return nil, err
	}
	return a, nil
}
