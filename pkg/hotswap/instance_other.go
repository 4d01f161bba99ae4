//go:build !linux

package hotswap

// pidSpace is "" where swdt cannot name the space of its PIDs: a holder
// is then judged by host name and PID.
func pidSpace() string { return "" }

// processStart is "" where swdt cannot read when a process started.
func processStart(int) string { return "" }
