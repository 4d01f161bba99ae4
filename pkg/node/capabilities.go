package node

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"time"

	"sigs.k8s.io/swdt/pkg/remote"
)

// A transport provides Conn; each interface below is one thing it may do
// beyond it. New asks the connection once which of them it implements
// (Capabilities reports the answer), and swdt does without each one it
// lacks (docs/DESIGN.md, "Transports"). *remote.Client implements them
// all.

// OpsAhead is a connection that opens the channel of the next op in the
// background and starts an op's command before its request is ready.
type OpsAhead interface {
	OpenSessionAhead()
	StartAhead(cmd string)
}

// UploadsAhead is a connection that starts what uploads need (the SFTP
// subsystem) while an op runs.
type UploadsAhead interface {
	StartSFTP(ctx context.Context) error
}

// LinkMeter is a connection that measures its link's round-trip time,
// once, as it connects: RTT has no answer until then, WaitRTT waits for
// it.
type LinkMeter interface {
	RTT() (time.Duration, bool)
	WaitRTT(ctx context.Context) (time.Duration, bool)
}

// QuickStater is a connection that describes a file in one round trip.
type QuickStater interface {
	QuickStat(ctx context.Context, remotePath string) (fs.FileInfo, error)
}

// LeanDownloader is a connection that also reads a file back with little
// asked for at a time, for a read-back where memory counts more than time
// (remote.Client.DownloadLean).
type LeanDownloader interface {
	DownloadLean(ctx context.Context, remotePath string, w io.Writer) error
}

// ExactUploader is a connection whose Upload puts exactly the bytes given
// on the node, checked on their way (SFTP over SSH, whose MAC covers every
// byte): the agent it uploads is not read back before it runs.
type ExactUploader interface {
	UploadsExact()
}

// HostKeyer is a connection that tells the host key of the machine it
// reached: with the address, it tells one machine from another made
// later at that address.
type HostKeyer interface {
	HostKey() string
}

// Forwarder is a connection that opens TCP streams to addresses as the
// node sees them (swdt port-forward).
type Forwarder interface {
	DialTCP(ctx context.Context, addr string) (net.Conn, error)
}

// Terminal is a connection that runs an interactive session with a
// terminal on the node (swdt ssh).
type Terminal interface {
	Shell(ctx context.Context, opts ShellOptions) (int, error)
}

// UnixDialer is a connection that opens streams to unix sockets of the
// machine it reaches (libvirtd's, for a qemu+ssh URI).
type UnixDialer interface {
	DialUnix(ctx context.Context, socketPath string) (net.Conn, error)
}

// Redialer is a connection that tells when it ends and dials again (swdt
// reboot).
type Redialer interface {
	Dropped() <-chan struct{}
	Reconnect(ctx context.Context) error
}

var (
	_ OpsAhead     = (*remote.Client)(nil)
	_ UploadsAhead = (*remote.Client)(nil)
	_ LinkMeter    = (*remote.Client)(nil)
	_ QuickStater  = (*remote.Client)(nil)
	_ HostKeyer    = (*remote.Client)(nil)
	_ Forwarder    = (*remote.Client)(nil)
	_ Terminal     = (*remote.Client)(nil)
	_ Redialer     = (*remote.Client)(nil)
	_ UnixDialer   = (*remote.Client)(nil)
)

// Capabilities is what a node can do beyond the ops and file calls every
// node has. The engine (pkg/hotswap) chooses its paths by it.
type Capabilities struct {
	// Encoding: the node takes a file compressed, or as a patch against
	// the file it has, in an upload its swap op decodes (UploadStream).
	// Every node on a Conn can; without it files go as they are.
	Encoding bool
	// Attachments: the swap op takes patches after its request, as they
	// are made (SwapServicesAttached). Every node on a Conn can, its
	// stdin being streamed; without it a patch goes in the request when
	// small, else as an upload.
	Attachments bool
	// OpsAhead: the connection is an OpsAhead (PrepareSession and
	// PrepareOp do something); without it each op starts when it runs.
	OpsAhead bool
	// UploadsAhead: the connection is an UploadsAhead (PrepareUploads
	// does something); without it the first upload starts the subsystem.
	UploadsAhead bool
	// LinkRTT: the connection is a LinkMeter; without it the link counts
	// as one of unknown speed (compressed uploads under --compress auto).
	LinkRTT bool
	// QuickStat: the connection is a QuickStater; without it a file is
	// described by Stat.
	QuickStat bool
	// PortForward, Terminal, Redial, UnixSockets: the connection is a
	// Forwarder, a Terminal, a Redialer, a UnixDialer; without one, what
	// needs it (swdt port-forward, ssh, reboot --wait, a qemu+ssh
	// hypervisor) fails saying so.
	PortForward, Terminal, Redial, UnixSockets bool
	// SSH: the connection is SSH (*remote.Client). Without it, a verb
	// that fails for want of one of the above says that it needs SSH.
	SSH bool
}

// extras are the optional interfaces of a node's connection, asked once
// by New (nil: it lacks one).
type extras struct {
	ahead   OpsAhead
	uploads UploadsAhead
	meter   LinkMeter
	quick   QuickStater
	exact   bool
	lean    LeanDownloader
	host    HostKeyer
	forward Forwarder
	term    Terminal
	redial  Redialer
	unix    UnixDialer
	ssh     bool
}

func extrasOf(c Conn) extras {
	var x extras
	x.ahead, _ = c.(OpsAhead)
	x.uploads, _ = c.(UploadsAhead)
	x.meter, _ = c.(LinkMeter)
	x.quick, _ = c.(QuickStater)
	_, x.exact = c.(ExactUploader)
	x.lean, _ = c.(LeanDownloader)
	x.host, _ = c.(HostKeyer)
	x.forward, _ = c.(Forwarder)
	x.term, _ = c.(Terminal)
	x.redial, _ = c.(Redialer)
	x.unix, _ = c.(UnixDialer)
	_, x.ssh = c.(*remote.Client)
	return x
}

// Capabilities says what the node can do beyond what every node does, as
// its connection told New.
func (n *Node) Capabilities() Capabilities {
	x := n.extras
	return Capabilities{
		Encoding: true, Attachments: true,
		OpsAhead: x.ahead != nil, UploadsAhead: x.uploads != nil, LinkRTT: x.meter != nil,
		QuickStat: x.quick != nil, PortForward: x.forward != nil, Terminal: x.term != nil, Redial: x.redial != nil,
		UnixSockets: x.unix != nil, SSH: x.ssh,
	}
}

// Logger is the node's log (the one New was given, naming the node).
func (n *Node) Logger() *slog.Logger { return n.logger }
