package source

import "golang.org/x/sys/windows"

// diskFree returns the bytes available to this user on dir's volume; ok
// is false when they cannot be read.
func diskFree(dir string) (free uint64, ok bool) {
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return 0, false
	}
	if windows.GetDiskFreeSpaceEx(p, &free, nil, nil) != nil {
		return 0, false
	}
	return free, true
}
