package ntfs

import (
	"errors"
	"fmt"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Win32 error codes the simulated file system reports.
const (
	CodeFileNotFound     = 2
	CodePathNotFound     = 3
	CodeAccessDenied     = 5
	CodeSharingViolation = 32
	CodeFileExists       = 80
	CodeInvalidParameter = 87
	CodeDirNotEmpty      = 145
	CodeAlreadyExists    = 183
)

// FileError is a file system error with Windows' wording.
type FileError struct {
	Op   string
	Path string
	// Code is the Win32 error code (CodeSharingViolation...).
	Code int
	Err  error
}

// Sentinels FileError unwraps to, for errors.Is.
var (
	ErrNotExist         = errors.New("not found")
	ErrExist            = errors.New("already exists")
	ErrSharingViolation = errors.New("sharing violation")
	ErrNotEmpty         = errors.New("directory not empty")
	ErrIsDir            = errors.New("is a directory")
)

func (e *FileError) Error() string {
	switch e.Code {
	case CodeSharingViolation:
		return fmt.Sprintf("The process cannot access the file '%s' because it is being used by another process.", e.Path)
	case CodeFileNotFound:
		return fmt.Sprintf("Cannot find path '%s' because it does not exist.", e.Path)
	case CodePathNotFound:
		return fmt.Sprintf("Could not find a part of the path '%s'.", e.Path)
	case CodeAlreadyExists, CodeFileExists:
		return fmt.Sprintf("Cannot create '%s' because a file or directory with the same name already exists.", e.Path)
	case CodeDirNotEmpty:
		return fmt.Sprintf("The directory '%s' is not empty.", e.Path)
	case CodeAccessDenied:
		return fmt.Sprintf("Access to the path '%s' is denied.", e.Path)
	}
	if e.Err != nil {
		return fmt.Sprintf("%s '%s': %v", e.Op, e.Path, e.Err)
	}
	return fmt.Sprintf("%s '%s' failed (error %d)", e.Op, e.Path, e.Code)
}

func (e *FileError) Unwrap() error { return e.Err }

// OpErrorKind maps the code to an op error kind.
func (e *FileError) OpErrorKind() ops.Kind {
	switch e.Code {
	case CodeFileNotFound, CodePathNotFound:
		return ops.KindNotFound
	case CodeSharingViolation:
		return ops.KindLocked
	case CodeAlreadyExists, CodeFileExists:
		return ops.KindExists
	case CodeAccessDenied:
		return ops.KindAccessDenied
	}
	return ops.KindIO
}

// FileErr is the FileError of op on p with code, unwrapping to its
// sentinel.
func FileErr(op string, p Path, code int) *FileError {
	var sentinel error
	switch code {
	case CodeFileNotFound, CodePathNotFound:
		sentinel = ErrNotExist
	case CodeAlreadyExists, CodeFileExists:
		sentinel = ErrExist
	case CodeSharingViolation:
		sentinel = ErrSharingViolation
	case CodeDirNotEmpty:
		sentinel = ErrNotEmpty
	case CodeAccessDenied:
		sentinel = ErrIsDir
	}
	return &FileError{Op: op, Path: string(p), Code: code, Err: sentinel}
}
