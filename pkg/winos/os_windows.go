package winos

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// New returns the machine the agent runs on. Each method is one system
// call or a short fixed sequence of them; failures are *Error values with
// the system's Win32 code and message.
func New() OS { return windowsOS{} }

type windowsOS struct{}

var _ OS = windowsOS{}

// winErr turns a failed call's error into *Error, keeping the Win32 code
// (an NTSTATUS is translated the way the Win32 layer does). An error that
// carries no code is only given the call's context.
func winErr(op, target string, err error) error {
	if err == nil {
		return nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return &Error{Op: op, Target: target, Code: Errno(errno), Message: errno.Error()}
	}
	var status windows.NTStatus
	if errors.As(err, &status) {
		errno = status.Errno()
		return &Error{Op: op, Target: target, Code: Errno(errno), Message: errno.Error()}
	}
	return fmt.Errorf("%s %s: %w", op, target, err)
}

// invalid is a request this layer refuses before calling the system.
func invalid(op, target, msg string) error {
	return &Error{Op: op, Target: target, Code: ErrInvalidParameter, Message: msg}
}

// Hostname uses GetComputerNameEx(ComputerNamePhysicalDnsHostname), as
// os.Hostname does on Windows.
func (windowsOS) Hostname() (string, error) {
	name, err := os.Hostname()
	return name, winErr("read host name", "this computer", err)
}

func (windowsOS) CurrentUser() (User, error) {
	token := windows.GetCurrentProcessToken()
	tu, err := token.GetTokenUser()
	if err != nil {
		return User{}, winErr("read token user", "current process", err)
	}
	account, domain, _, err := tu.User.Sid.LookupAccount("")
	if err != nil {
		return User{}, winErr("look up account", tu.User.Sid.String(), err)
	}
	owner, err := tokenOwner(token)
	if err != nil {
		return User{}, winErr("read token owner", "current process", err)
	}
	return User{Name: domain + `\` + account, Admin: token.IsElevated(), Owner: owner, SID: tu.User.Sid.String()}, nil
}

func (windowsOS) Stat(path string) (FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return FileInfo{}, winErr("stat", path, err)
	}
	return FileInfo{Size: fi.Size(), ModTime: fi.ModTime(), IsDir: fi.IsDir()}, nil
}

// Open shares read, write and delete access, unlike os.Open (which
// shares no delete access): a file the agent only reads (a hash, a
// status) must not make a rename or delete of it fail.
func (windowsOS) Open(path string) (File, error) {
	p, err := windows.UTF16PtrFromString(longPath(path))
	if err != nil {
		return nil, winErr("open", path, err)
	}
	h, err := windows.CreateFile(p, windows.GENERIC_READ, windows.FILE_SHARE_READ|windows.FILE_SHARE_WRITE|windows.FILE_SHARE_DELETE,
		nil, windows.OPEN_EXISTING, windows.FILE_ATTRIBUTE_NORMAL, 0)
	if err != nil {
		return nil, winErr("open", path, err)
	}
	return os.NewFile(uintptr(h), path), nil
}

// Create returns a Cloner on a volume that clones blocks (ReFS).
func (windowsOS) Create(path string) (io.WriteCloser, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, winErr("create", path, err)
	}
	if c := cloneCluster(f); c > 0 {
		return cloneFile{File: f, cluster: c}, nil
	}
	return f, nil
}

func (windowsOS) WriteFile(path string, data []byte) error {
	return winErr("write", path, os.WriteFile(path, data, 0o644))
}

// Rename is MoveFileEx without MOVEFILE_REPLACE_EXISTING (so an existing
// newPath is ERROR_ALREADY_EXISTS) and without MOVEFILE_COPY_ALLOWED (so
// it never turns into a copy across volumes). Windows lets a running
// executable be renamed but not deleted or overwritten.
func (windowsOS) Rename(oldPath, newPath string) error {
	from, err := windows.UTF16PtrFromString(longPath(oldPath))
	if err != nil {
		return winErr("rename", oldPath, err)
	}
	to, err := windows.UTF16PtrFromString(longPath(newPath))
	if err != nil {
		return winErr("rename", newPath, err)
	}
	return winErr("rename", oldPath, windows.MoveFileEx(from, to, 0))
}

func (windowsOS) Remove(path string) error {
	return winErr("remove", path, os.Remove(path))
}

func (windowsOS) ReadDir(path string) ([]string, error) {
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, winErr("list", path, err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

func (windowsOS) MkdirAll(path string) error {
	return winErr("create directory", path, os.MkdirAll(path, 0o755))
}

// RegistryValue reads the value's kind first, then the value with the
// typed getter for that kind.
func (windowsOS) RegistryValue(key, name string) (RegistryValue, error) {
	const op = "read registry value"
	target := `HKLM\` + key + `\` + name
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, key, registry.QUERY_VALUE)
	if err != nil {
		return RegistryValue{}, winErr(op, target, err)
	}
	defer k.Close()
	_, kind, err := k.GetValue(name, nil)
	if err != nil {
		return RegistryValue{}, winErr(op, target, err)
	}
	v := RegistryValue{Name: name}
	switch kind {
	case registry.SZ, registry.EXPAND_SZ:
		v.Kind = RegString
		if kind == registry.EXPAND_SZ {
			v.Kind = RegExpandString
		}
		v.String, _, err = k.GetStringValue(name)
	case registry.MULTI_SZ:
		v.Kind = RegMultiString
		v.Strings, _, err = k.GetStringsValue(name)
	case registry.DWORD, registry.QWORD:
		v.Kind = RegDWord
		if kind == registry.QWORD {
			v.Kind = RegQWord
		}
		v.Number, _, err = k.GetIntegerValue(name)
	case registry.BINARY:
		// RegistryValue has no field for bytes: the kind is all a
		// caller learns of a binary value.
		v.Kind = RegBinary
	default:
		return RegistryValue{}, &Error{Op: op, Target: target, Code: Errno(windows.ERROR_UNSUPPORTED_TYPE),
			Message: fmt.Sprintf("registry value type %d is not supported", kind)}
	}
	if err != nil {
		return RegistryValue{}, winErr(op, target, err)
	}
	return v, nil
}

// SetRegistryValue opens the key with RegCreateKeyEx, which creates it
// (and its missing parents) when needed, then writes the value.
func (windowsOS) SetRegistryValue(key string, v RegistryValue) error {
	const op = "write registry value"
	target := `HKLM\` + key + `\` + v.Name
	var set func(registry.Key) error
	switch v.Kind {
	case RegString:
		set = func(k registry.Key) error { return k.SetStringValue(v.Name, v.String) }
	case RegExpandString:
		set = func(k registry.Key) error { return k.SetExpandStringValue(v.Name, v.String) }
	case RegMultiString:
		set = func(k registry.Key) error { return k.SetStringsValue(v.Name, v.Strings) }
	case RegDWord:
		if v.Number > math.MaxUint32 {
			return invalid(op, target, fmt.Sprintf("%d does not fit a DWord", v.Number))
		}
		set = func(k registry.Key) error { return k.SetDWordValue(v.Name, uint32(v.Number)) }
	case RegQWord:
		set = func(k registry.Key) error { return k.SetQWordValue(v.Name, v.Number) }
	default:
		return invalid(op, target, fmt.Sprintf("cannot write a registry value of kind %q", v.Kind))
	}
	k, _, err := registry.CreateKey(registry.LOCAL_MACHINE, key, registry.SET_VALUE)
	if err != nil {
		return winErr(op, target, err)
	}
	defer k.Close()
	return winErr(op, target, set(k))
}
