package front

import (
	"errors"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
	"sigs.k8s.io/swdt/pkg/simnode/machine"
	"sigs.k8s.io/swdt/pkg/simnode/machine/ntfs"
	"sigs.k8s.io/swdt/pkg/simnode/simos"
)

// serveSFTP runs the sftp subsystem on ch, as Windows OpenSSH's
// sftp-server: paths are /C:/dir/file, the start directory is the user's
// profile, and the NTFS locking rules apply.
func (cs *connState) serveSFTP(ch ssh.Channel) {
	h := &sftpHandler{cs: cs, n: cs.srv.node(cs.account), home: "/C:/Users/" + cs.account.Name}
	handlers := sftp.Handlers{FileGet: h, FilePut: h, FileCmd: h, FileList: h}
	rs := sftp.NewRequestServer(ch, handlers, sftp.WithStartDirectory(h.home))
	if err := rs.Serve(); err != nil && !errors.Is(err, io.EOF) {
		cs.srv.log.Debug("sftp session ended", "err", err)
	}
	rs.Close()
}

type sftpHandler struct {
	cs   *connState
	n    *simos.Node
	home string
}

// statusErr carries a Windows-worded message with an SFTP status code.
type statusErr struct {
	msg  string
	code error // one of sftp.ErrSSHFx*
}

func (e *statusErr) Error() string { return e.msg }
func (e *statusErr) Unwrap() error { return e.code }

// toStatus maps simnode errors to SFTP status codes; the message is what
// the client prints.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	var fe *machine.FileError
	if errors.As(err, &fe) {
		switch fe.Code {
		case machine.CodeFileNotFound, machine.CodePathNotFound:
			return &statusErr{msg: fe.Error(), code: sftp.ErrSSHFxNoSuchFile}
		case machine.CodeAccessDenied:
			return &statusErr{msg: fe.Error(), code: sftp.ErrSSHFxPermissionDenied}
		default:
			return &statusErr{msg: fe.Error(), code: sftp.ErrSSHFxFailure}
		}
	}
	if errors.Is(err, ntfs.ErrBadPath) {
		return &statusErr{msg: err.Error(), code: sftp.ErrSSHFxNoSuchFile}
	}
	return &statusErr{msg: err.Error(), code: sftp.ErrSSHFxFailure}
}

func isVirtualRoot(p string) bool { return p == "/" || p == "" }

func (h *sftpHandler) Fileread(r *sftp.Request) (io.ReaderAt, error) {
	f, err := h.n.OpenFile(r.Filepath)
	if err != nil {
		return nil, toStatus(err)
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		f.Close()
		return nil, &statusErr{msg: "Access is denied.", code: sftp.ErrSSHFxFailure}
	}
	return f, nil
}

func (h *sftpHandler) Filewrite(r *sftp.Request) (io.WriterAt, error) {
	return h.open(r, false)
}

// OpenFile serves read+write opens.
func (h *sftpHandler) OpenFile(r *sftp.Request) (sftp.WriterAtReaderAt, error) {
	return h.open(r, true)
}

func (h *sftpHandler) open(r *sftp.Request, read bool) (*cuttingWriter, error) {
	fl := r.Pflags()
	wh, err := h.n.OpenWrite(r.Filepath, machine.OpenFlags{Create: fl.Creat, Trunc: fl.Trunc, Excl: fl.Excl, Read: read})
	if err != nil {
		return nil, toStatus(err)
	}
	if cut := h.n.Faults().CutAfterBytes; cut > 0 {
		h.cs.mu.Lock()
		if h.cs.cutAt == 0 {
			h.cs.cutAt = h.cs.sftpWritten + cut
		}
		h.cs.mu.Unlock()
	}
	return &cuttingWriter{WriteHandle: wh, cs: h.cs}, nil
}

// cuttingWriter writes to the file and plays the "connection cut after N
// bytes" fault.
type cuttingWriter struct {
	*machine.WriteHandle
	cs *connState
}

func (w *cuttingWriter) WriteAt(p []byte, off int64) (int, error) {
	cs := w.cs
	cs.mu.Lock()
	cut := false
	if cs.cutAt > 0 && cs.sftpWritten+int64(len(p)) >= cs.cutAt {
		allowed := cs.cutAt - cs.sftpWritten
		p = p[:max(0, allowed)]
		cut = true
		cs.cutAt = 0
	}
	cs.sftpWritten += int64(len(p))
	written := cs.sftpWritten
	cs.mu.Unlock()
	n, err := w.WriteHandle.WriteAt(p, off)
	if cut {
		_ = cs.srv.m.UpdateFaults(func(f *machine.Faults) { f.CutAfterBytes = 0 })
		cs.srv.log.Info("fault: cutting connection", "after", written)
		cs.conn.Close()
		return n, errors.New("simnode: connection cut by fault injection")
	}
	return n, err
}

func (h *sftpHandler) Filecmd(r *sftp.Request) error {
	switch r.Method {
	case "Setstat":
		attrs := r.Attributes()
		fl := r.AttrFlags()
		if fl.Size {
			if err := h.n.Truncate(r.Filepath, int64(attrs.Size)); err != nil {
				return toStatus(err)
			}
		}
		if fl.Acmodtime {
			if err := h.n.Chtimes(r.Filepath, time.Unix(int64(attrs.Atime), 0), time.Unix(int64(attrs.Mtime), 0)); err != nil {
				return toStatus(err)
			}
		}
		if !fl.Size && !fl.Acmodtime {
			if _, err := h.n.Stat(r.Filepath); err != nil {
				return toStatus(err)
			}
		}
		return nil
	case "Rename":
		return toStatus(h.n.Rename(r.Filepath, r.Target, false))
	case "Rmdir":
		fi, err := h.n.Stat(r.Filepath)
		if err != nil {
			return toStatus(err)
		}
		if !fi.IsDir {
			return &statusErr{msg: "The directory name is invalid.", code: sftp.ErrSSHFxFailure}
		}
		return toStatus(h.n.Remove(r.Filepath))
	case "Remove":
		fi, err := h.n.Stat(r.Filepath)
		if err != nil {
			return toStatus(err)
		}
		if fi.IsDir {
			return &statusErr{msg: "Access is denied.", code: sftp.ErrSSHFxFailure}
		}
		return toStatus(h.n.Remove(r.Filepath))
	case "Mkdir":
		return toStatus(h.n.Mkdir(r.Filepath))
	}
	return sftp.ErrSSHFxOpUnsupported
}

// PosixRename replaces an existing target (posix-rename@openssh.com).
func (h *sftpHandler) PosixRename(r *sftp.Request) error {
	return toStatus(h.n.Rename(r.Filepath, r.Target, true))
}

func (h *sftpHandler) Filelist(r *sftp.Request) (sftp.ListerAt, error) {
	switch r.Method {
	case "List":
		if isVirtualRoot(r.Filepath) {
			return listerAt{driveInfo("C:")}, nil
		}
		entries, err := h.n.List(r.Filepath)
		if err != nil {
			return nil, toStatus(err)
		}
		out := make(listerAt, 0, len(entries))
		for _, e := range entries {
			out = append(out, osInfo(e))
		}
		return out, nil
	case "Stat", "Lstat":
		if isVirtualRoot(r.Filepath) {
			return listerAt{driveInfo("/")}, nil
		}
		fi, err := h.n.Stat(r.Filepath)
		if err != nil {
			return nil, toStatus(err)
		}
		return listerAt{osInfo(fi)}, nil
	}
	return nil, sftp.ErrSSHFxOpUnsupported
}

// RealPath canonicalises like Windows OpenSSH: /C:/Users/Administrator for
// ".", drive paths with forward slashes, the on-disk spelling of existing
// components.
func (h *sftpHandler) RealPath(p string) (string, error) {
	if p == "" || p == "." {
		return h.home, nil
	}
	if p == "/" {
		return "/", nil
	}
	s := strings.ReplaceAll(p, `\`, "/")
	if !strings.HasPrefix(s, "/") {
		first, _, _ := strings.Cut(s, "/")
		if !ntfs.IsDrive(first) {
			s = path.Join(h.home, s)
		}
	}
	p, err := h.n.RealPath(s)
	if err != nil {
		return "", toStatus(err)
	}
	return p, nil
}

type listerAt []os.FileInfo

func (l listerAt) ListAt(out []os.FileInfo, off int64) (int, error) {
	if off >= int64(len(l)) {
		return 0, io.EOF
	}
	n := copy(out, l[off:])
	if n < len(out) || off+int64(n) >= int64(len(l)) {
		return n, io.EOF
	}
	return n, nil
}

type fileInfo struct{ fi machine.FileInfo }

func osInfo(fi machine.FileInfo) os.FileInfo { return fileInfo{fi} }

func driveInfo(name string) os.FileInfo {
	return fileInfo{machine.FileInfo{Name: name, IsDir: true, Mode: os.ModeDir | 0o755, ModTime: time.Unix(0, 0)}}
}

func (f fileInfo) Name() string       { return f.fi.Name }
func (f fileInfo) Size() int64        { return f.fi.Size }
func (f fileInfo) ModTime() time.Time { return f.fi.ModTime }
func (f fileInfo) IsDir() bool        { return f.fi.IsDir }
func (f fileInfo) Sys() any           { return nil }
func (f fileInfo) Mode() os.FileMode {
	if f.fi.IsDir {
		return os.ModeDir | 0o755
	}
	return 0o644
}
