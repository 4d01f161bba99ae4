package source

// fileID is what changes when a file is rewritten or replaced, even when
// its size and modification time are kept (cp -p, rsync -t, tar): the
// file's identity on its volume and its change time. The hash cache
// trusts a record only when the fileID is the same too.
type fileID struct {
	// Device is the device or volume the file is on.
	Device uint64 `json:"device"`
	// Index is the inode number (the file index on Windows).
	Index uint64 `json:"index"`
	// Change is the status change time (ctime; ChangeTime on Windows), in
	// the platform's own unit: it is only compared.
	Change int64 `json:"change"`
}
