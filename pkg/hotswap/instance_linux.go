package hotswap

import (
	"os"
	"strconv"
	"strings"
)

// pidSpace names the space this process's PID means something in: the
// kernel's boot ID and the PID namespace. Two runs on one host name in
// different containers, or before and after a reboot, have different
// ones, and neither can tell whether the other's PID is alive.
func pidSpace() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}

// processStart is when process pid started, in clock ticks since boot
// (/proc/PID/stat's starttime), "" when it cannot be read: with the PID
// it names one process, not a later one that got the same PID.
func processStart(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	i := strings.LastIndexByte(string(raw), ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(string(raw[i+1:]))
	const starttime = 22 - 3 // field 22; fields[0] is field 3
	if len(fields) <= starttime {
		return ""
	}
	return fields[starttime]
}
