package winos

import (
	"slices"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Pipes lists \\.\pipe\ with FindFirstFile and FindNextFile, as .NET's
// Directory.GetFiles does; opening a pipe to test it would take one of
// its server's instances.
func (windowsOS) Pipes() ([]string, error) {
	const op, dir = "list named pipes", `\\.\pipe\`
	pattern, err := windows.UTF16PtrFromString(dir + "*")
	if err != nil {
		return nil, winErr(op, dir, err)
	}
	var fd windows.Win32finddata
	h, err := windows.FindFirstFile(pattern, &fd)
	if err == windows.ERROR_FILE_NOT_FOUND {
		return []string{}, nil
	}
	if err != nil {
		return nil, winErr(op, dir, err)
	}
	defer windows.FindClose(h)
	var names []string
	for err == nil {
		names = append(names, windows.UTF16ToString(fd.FileName[:]))
		err = windows.FindNextFile(h, &fd)
	}
	if err != windows.ERROR_NO_MORE_FILES {
		return nil, winErr(op, dir, err)
	}
	slices.Sort(names)
	return names, nil
}

// WaitNamedPipeW is not in x/sys/windows.
var procWaitNamedPipeW = windows.NewLazySystemDLL("kernel32.dll").NewProc("WaitNamedPipeW")

// PipeExists is WaitNamedPipe with a 1 ms wait, which finds a pipe by its
// name without connecting to it: it exists when an instance is free, or
// when every instance is busy (ERROR_SEM_TIMEOUT).
func (windowsOS) PipeExists(name string) (bool, error) {
	const op = "probe named pipe"
	path := `\\.\pipe\` + name
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return false, winErr(op, path, err)
	}
	r, _, err := procWaitNamedPipeW.Call(uintptr(unsafe.Pointer(p)), 1)
	switch {
	case r != 0, err == windows.ERROR_SEM_TIMEOUT:
		return true, nil
	case err == windows.ERROR_FILE_NOT_FOUND:
		return false, nil
	}
	return false, winErr(op, path, err)
}

// GetExtendedTcpTable is not in x/sys/windows.
var procGetExtendedTcpTable = windows.NewLazySystemDLL("iphlpapi.dll").NewProc("GetExtendedTcpTable")

// tcpTableOwnerPIDListener is TCP_TABLE_OWNER_PID_LISTENER: only sockets
// in the LISTEN state.
const tcpTableOwnerPIDListener = 3

// PortListening reads the IPv4 and IPv6 listener tables.
func (windowsOS) PortListening(port int) (bool, error) {
	for _, t := range []struct {
		name                string
		family              uint32
		rowSize, portOffset int
	}{
		{"IPv4", windows.AF_INET, tcpRowSize, tcpRowPortOffset},
		{"IPv6", windows.AF_INET6, tcp6RowSize, tcp6RowPortOff},
	} {
		table, err := tcpListeners(t.family)
		if err != nil {
			return false, winErr("read TCP listeners", t.name, err)
		}
		ports, err := tcpTablePorts(table, t.rowSize, t.portOffset)
		if err != nil {
			return false, err
		}
		if slices.Contains(ports, port) {
			return true, nil
		}
	}
	return false, nil
}

// tcpListeners is GetExtendedTcpTable's listener table for one address
// family. The first buffer fits a usual node's listeners; when it is too
// small the call says how large one must be, and the table may grow
// before the next call, so each new buffer leaves room for a few more
// rows, and the tries are bounded.
func tcpListeners(family uint32) ([]byte, error) {
	buf := make([]byte, 4+128*tcp6RowSize)
	for range 4 {
		size := uint32(len(buf))
		r, _, _ := procGetExtendedTcpTable.Call(uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)),
			0, uintptr(family), tcpTableOwnerPIDListener, 0)
		switch err := windows.Errno(r); err {
		case windows.ERROR_SUCCESS:
			return buf, nil
		case windows.ERROR_INSUFFICIENT_BUFFER:
			buf = make([]byte, size+16*tcp6RowSize)
		default:
			return nil, err
		}
	}
	return nil, windows.ERROR_INSUFFICIENT_BUFFER
}
