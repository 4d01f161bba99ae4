package winos

import (
	"errors"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Block cloning on Windows: ReFS (Windows Server 2016 and later, and a
// Dev Drive) duplicates extents between files of one volume with
// FSCTL_DUPLICATE_EXTENTS_TO_FILE, in whole clusters, into a range the
// target already covers (SetEndOfFile first). NTFS answers neither that
// nor FSCTL_GET_INTEGRITY_INFORMATION, which tells ReFS's cluster size,
// and its volumes lack FILE_SUPPORTS_BLOCK_REFCOUNTING: a file created
// there is a plain *os.File and the agent copies.

// fileSupportsBlockRefcounting is GetVolumeInformation's flag of a volume
// that clones blocks.
const fileSupportsBlockRefcounting = 0x08000000

// maxCloneChunk bounds one FSCTL_DUPLICATE_EXTENTS_TO_FILE (under 4 GiB).
const maxCloneChunk = 1 << 30

// integrityInformation is FSCTL_GET_INTEGRITY_INFORMATION_BUFFER.
type integrityInformation struct {
	ChecksumAlgorithm        uint16
	Reserved                 uint16
	Flags                    uint32
	ChecksumChunkSizeInBytes uint32
	ClusterSizeInBytes       uint32
}

// duplicateExtentsData is DUPLICATE_EXTENTS_DATA.
type duplicateExtentsData struct {
	FileHandle       windows.Handle
	SourceFileOffset int64
	TargetFileOffset int64
	ByteCount        int64
}

// cloneCluster is the cluster size of f's volume when it clones blocks,
// else 0.
func cloneCluster(f *os.File) int64 {
	h := windows.Handle(f.Fd())
	var flags uint32
	if err := windows.GetVolumeInformationByHandle(h, nil, 0, nil, nil, &flags, nil, 0); err != nil || flags&fileSupportsBlockRefcounting == 0 {
		return 0
	}
	var info integrityInformation
	var n uint32
	if err := windows.DeviceIoControl(h, windows.FSCTL_GET_INTEGRITY_INFORMATION, nil, 0,
		(*byte)(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), &n, nil); err != nil {
		return 0
	}
	return int64(info.ClusterSizeInBytes)
}

var _ Cloner = cloneFile{}

// cloneFile is a file being written on a volume that clones blocks.
type cloneFile struct {
	*os.File
	cluster int64
}

func (f cloneFile) ClusterSize() int64 { return f.cluster }

func (f cloneFile) CloneAppend(src File, off, n int64) error {
	s, ok := src.(*os.File)
	if !ok {
		return winErr("clone into", f.Name(), errors.New("the source is not a file Open opened"))
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return winErr("clone into", f.Name(), err)
	}
	if err := f.Truncate(pos + n); err != nil {
		return winErr("clone into", f.Name(), err)
	}
	for done := int64(0); done < n; {
		d := duplicateExtentsData{FileHandle: windows.Handle(s.Fd()), SourceFileOffset: off + done, TargetFileOffset: pos + done,
			ByteCount: min(n-done, maxCloneChunk)}
		var ret uint32
		if err := windows.DeviceIoControl(windows.Handle(f.Fd()), windows.FSCTL_DUPLICATE_EXTENTS_TO_FILE,
			(*byte)(unsafe.Pointer(&d)), uint32(unsafe.Sizeof(d)), nil, 0, &ret, nil); err != nil {
			_ = f.Truncate(pos)
			return winErr("clone into", f.Name(), err)
		}
		done += d.ByteCount
	}
	if _, err := f.Seek(pos+n, io.SeekStart); err != nil {
		return winErr("clone into", f.Name(), err)
	}
	return nil
}
