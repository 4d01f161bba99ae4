package source

import (
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// fileBasicInfo is Windows' FILE_BASIC_INFO.
type fileBasicInfo struct {
	CreationTime, LastAccessTime, LastWriteTime, ChangeTime int64
	FileAttributes                                          uint32
	_                                                       uint32
}

// statFileID reads path's fileID: its volume serial number, file index and
// change time. os.Stat does not report them, so the file is opened; ok is
// false when it cannot be.
func statFileID(path string, _ fs.FileInfo) (id fileID, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return fileID{}, false
	}
	defer f.Close()
	var byHandle syscall.ByHandleFileInformation
	if syscall.GetFileInformationByHandle(syscall.Handle(f.Fd()), &byHandle) != nil {
		return fileID{}, false
	}
	var basic fileBasicInfo
	if windows.GetFileInformationByHandleEx(windows.Handle(f.Fd()), windows.FileBasicInfo,
		(*byte)(unsafe.Pointer(&basic)), uint32(unsafe.Sizeof(basic))) != nil {
		return fileID{}, false
	}
	return fileID{
		Device: uint64(byHandle.VolumeSerialNumber),
		Index:  uint64(byHandle.FileIndexHigh)<<32 | uint64(byHandle.FileIndexLow),
		Change: basic.ChangeTime,
	}, true
}
