package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"sigs.k8s.io/swdt/internal/retry"
)

// cancelGrace is how long a call whose context ended may take to wind down
// before the connection under it is torn down to free it.
const cancelGrace = time.Second

// Client is an SSH connection to one node. It is safe for concurrent use.
// When the connection dies, the next call dials a new one.
type Client struct {
	cfg  Config
	t    target
	log  *slog.Logger
	keys *keySource
	// creds are each hop's credentials, in route order.
	creds []*credentials

	dialSem chan struct{} // one dial at a time
	mu      sync.Mutex
	cur     *conn
	closed  bool
	// hostKey is the SHA256 fingerprint of the key the node (the last
	// hop) presented at the latest handshake (guarded by mu).
	hostKey string
}

// Dial connects and authenticates to the node described by cfg, through
// the jump hosts or ProxyCommand the ssh config gives for it. The whole of
// it (TCP connect, handshakes, auth) is bounded by cfg.DialTimeout and ctx.
func Dial(ctx context.Context, cfg Config) (*Client, error) {
	t, err := resolve(cfg)
	if err != nil {
		return nil, fmt.Errorf("ssh config for %q: %w", cfg.Host, err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	keys := openKeySource(cfg.Passphrase, log)
	route := t.route()
	creds := make([]*credentials, len(route))
	for i, h := range route {
		password := "" // jump hosts get keys only: the password is the node's
		if i == len(route)-1 {
			password = cfg.Password
		}
		if creds[i], err = keys.credentials(h, password); err != nil {
			keys.close()
			if i < len(route)-1 {
				err = fmt.Errorf("jump host %s: %w", h.name, err)
			}
			return nil, err
		}
	}
	c := &Client{cfg: cfg, t: t, log: log, keys: keys, creds: creds, dialSem: make(chan struct{}, 1)}
	if t.ignored != "" {
		c.warn(t.ignored)
	}
	if node := creds[len(creds)-1]; cfg.Password == "" && cfg.PasswordEnv != "" {
		if len(node.agentSigners)+len(node.keySigners) == 0 {
			keys.close()
			return nil, &PasswordUnsetError{Var: cfg.PasswordEnv, NodeFile: cfg.NodeFile}
		}
		// No warning while the keys log in: the missing password only
		// matters when they do not (see AuthError.PasswordUnset).
	}
	if _, err := c.conn(ctx); err != nil {
		keys.close()
		return nil, err
	}
	return c, nil
}

// Addr is the host:port the client dials (after ~/.ssh/config).
func (c *Client) Addr() string { return c.t.addr }

// HostKey is the SHA256 fingerprint of the host key the node presented
// when the client last connected: with Addr, it names the machine (a VM
// made again at the same address has another key).
func (c *Client) HostKey() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hostKey
}

// User is the account the client logs in as.
func (c *Client) User() string { return c.t.user }

// Close closes the connection. Calls after Close fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	cur := c.cur
	c.closed, c.cur = true, nil
	c.mu.Unlock()
	c.keys.close()
	if cur != nil {
		cur.kill(ErrClosed)
	}
	return nil
}

// Reconnect drops the current connection (if any) and dials a new one.
// Calls reconnect by themselves when they find the connection dead; this
// is for callers that know better, for example after rebooting the node.
func (c *Client) Reconnect(ctx context.Context) error {
	c.mu.Lock()
	cur := c.cur
	c.cur = nil
	c.mu.Unlock()
	if cur != nil {
		cur.kill(errors.New("reconnect requested"))
	}
	_, err := c.conn(ctx)
	return err
}

// conn returns the live connection, dialling one when there is none.
func (c *Client) conn(ctx context.Context) (*conn, error) {
	if cn, err := c.live(); cn != nil || err != nil {
		return cn, err
	}
	select {
	case c.dialSem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("connect to %s: %w", c.t.addr, ctx.Err())
	}
	defer func() { <-c.dialSem }()
	if cn, err := c.live(); cn != nil || err != nil {
		return cn, err // another caller reconnected meanwhile
	}
	cn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cn.kill(ErrClosed)
		return nil, ErrClosed
	}
	c.cur = cn
	return cn, nil
}

func (c *Client) live() (*conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.cur != nil && !c.cur.dead() {
		return c.cur, nil
	}
	return nil, nil
}

func (c *Client) dial(ctx context.Context) (*conn, error) {
	t := c.t
	route := t.route()
	dctx, cancel := context.WithTimeout(ctx, t.dialTimeout)
	defer cancel()
	c.log.Debug("ssh dial", "addr", t.addr, "user", t.user, "via", len(t.via), "timeout", t.dialTimeout)

	first := route[0]
	base, err := c.open(dctx, first)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("connect to %s: %w", t.addr, ctx.Err())
		}
		return nil, err
	}
	if dl, ok := dctx.Deadline(); ok {
		_ = base.SetDeadline(dl)
	}
	// The SSH library has no context: closing the connection under the
	// first hop aborts every handshake above it.
	stop := context.AfterFunc(dctx, func() { base.Close() })
	var jumps []*ssh.Client
	fail := func(err error) (*conn, error) {
		stop()
		for _, j := range slices.Backward(jumps) {
			j.Close()
		}
		base.Close()
		var de *DialError
		if pc, ok := base.(*proxyConn); ok && errors.As(err, &de) {
			de.Err = pc.explain(de.Err)
		}
		return nil, err
	}
	nc := base
	var client *ssh.Client
	var clock *readClock // on the node's hop, for keepAlive
	for i, h := range route {
		if i > 0 {
			prev := route[i-1].name
			if nc, err = jumps[i-1].DialContext(dctx, "tcp", h.addr); err != nil {
				if ctx.Err() != nil {
					return fail(fmt.Errorf("connect to %s: %w", t.addr, ctx.Err()))
				}
				return fail(&DialError{Addr: h.addr, Stage: "connect", Timeout: t.dialTimeout, ViaJump: prev, Jump: jumpName(route, i), Err: err})
			}
		}
		if i == len(route)-1 {
			clock = newReadClock(nc)
			nc = clock
		}
		if client, err = c.handshake(ctx, dctx, nc, i); err != nil {
			// Dial and auth errors name the jump host themselves; host
			// key errors name the host by its address only.
			var de *DialError
			var ae *AuthError
			switch {
			case errors.As(err, &de):
				de.Jump = jumpName(route, i)
				if i > 0 {
					de.ViaJump = route[i-1].name
				} else {
					de.ProxyCommand = first.proxyCommand
				}
			case !errors.As(err, &ae) && i < len(route)-1 && ctx.Err() == nil:
				err = fmt.Errorf("jump host %s: %w", h.name, err)
			}
			return fail(err)
		}
		if i < len(route)-1 {
			jumps = append(jumps, client)
		}
	}
	if !stop() {
		client.Close()
		if ctx.Err() != nil {
			return fail(fmt.Errorf("connect to %s: %w", t.addr, ctx.Err()))
		}
		return fail(&DialError{Addr: t.addr, Stage: "handshake", Timeout: t.dialTimeout, Err: dctx.Err()})
	}
	_ = base.SetDeadline(time.Time{})
	cn := newConn(client, jumps, c.log)
	cn.clock = clock
	go cn.probeRTT()
	cn.openSpare()
	if t.keepAlive > 0 {
		go cn.keepAlive(t.keepAlive, clock)
	}
	c.log.Debug("ssh connected", "addr", t.addr, "user", t.user, "server", string(client.ServerVersion()))
	return cn, nil
}

// jumpName is route[i]'s name when it is a jump host, else "".
func jumpName(route []hop, i int) string {
	if i == len(route)-1 {
		return ""
	}
	return route[i].name
}

// open connects to the first hop of a route: TCP, or its ProxyCommand.
func (c *Client) open(ctx context.Context, h hop) (net.Conn, error) {
	if h.proxyCommand != "" {
		c.log.Debug("ssh proxy command", "host", h.name, "command", h.proxyCommand)
		pc, err := startProxyCommand(h.proxyCommand)
		if err != nil {
			return nil, &DialError{Addr: h.addr, Stage: "connect", Timeout: c.t.dialTimeout, ProxyCommand: h.proxyCommand, Jump: jumpName(c.t.route(), 0), Err: err}
		}
		return pc, nil
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", h.addr)
	if err != nil {
		return nil, &DialError{Addr: h.addr, Stage: "connect", Timeout: c.t.dialTimeout, Jump: jumpName(c.t.route(), 0), Err: err}
	}
	return nc, nil
}

// handshake runs the SSH handshake and authentication of route[i] over
// nc. Its errors are typed (*DialError, *AuthError, host key errors) but
// do not say yet how the hop was reached.
func (c *Client) handshake(ctx, dctx context.Context, nc net.Conn, i int) (*ssh.Client, error) {
	h := c.t.route()[i]
	hk, err := newHostKeyChecker(h, c.warn)
	if err != nil {
		return nil, err
	}
	methods, offer := c.creds[i].methods()
	last := i == len(c.t.route())-1
	var (
		authMu      sync.Mutex
		authStarted bool
		allowed     []string
		triedNames  []string
	)
	sc := &ssh.ClientConfig{
		User: h.user,
		Auth: methods,
		HostKeyCallback: func(addr string, remote net.Addr, key ssh.PublicKey) error {
			err := hk.callback(addr, remote, key)
			if err == nil && last {
				c.mu.Lock()
				c.hostKey = ssh.FingerprintSHA256(key)
				c.mu.Unlock()
			}
			return err
		},
		HostKeyAlgorithms: hk.algorithms(h.addr),
		Timeout:           c.t.dialTimeout,
		AuthCallback: func(ac *ssh.ClientAuthContext) (ssh.AuthMethod, error) {
			authMu.Lock()
			authStarted, allowed, triedNames = true, ac.AllowedMethods, ac.TriedMethods
			authMu.Unlock()
			return nil, nil
		},
	}
	sconn, chans, reqs, err := ssh.NewClientConn(nc, h.addr, sc)
	if err == nil {
		return ssh.NewClient(sconn, chans, reqs), nil
	}
	authMu.Lock()
	started, allow, triedN := authStarted, allowed, triedNames
	authMu.Unlock()
	switch {
	case hk.err != nil:
		return nil, hk.err
	case ctx.Err() != nil:
		return nil, fmt.Errorf("connect to %s: %w", c.t.addr, ctx.Err())
	case started && !isNetErr(err) && dctx.Err() == nil:
		ae := &AuthError{User: h.user, Addr: h.addr, Jump: jumpName(c.t.route(), i), Allowed: allow, Err: err}
		if ae.Jump == "" && c.cfg.Password == "" && c.cfg.PasswordEnv != "" {
			ae.PasswordUnset = unsetOrEmpty(c.cfg.PasswordEnv)
		}
		for _, o := range offer {
			if slices.Contains(triedN, o.name) {
				ae.Tried = append(ae.Tried, o.desc)
			} else {
				ae.NotTried = append(ae.NotTried, o.desc)
			}
		}
		return nil, ae
	}
	return nil, &DialError{Addr: h.addr, Timeout: c.t.dialTimeout, Stage: "handshake", Err: err}
}

func (c *Client) warn(msg string) {
	if c.cfg.Warn != nil {
		c.cfg.Warn(msg)
		return
	}
	c.log.Warn(msg)
}

// isNetErr reports transport failures (as opposed to the server saying no).
func isNetErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET)
}

// conn is one SSH connection and its lazily opened SFTP client.
type conn struct {
	ssh *ssh.Client
	// jumps are the connections to the jump hosts under ssh, first
	// dialled first; they are closed with it.
	jumps []*ssh.Client
	log   *slog.Logger
	done  chan struct{}

	mu     sync.Mutex // guards reason
	reason error

	sftpMu sync.Mutex // held while the subsystem starts, which may block
	sftp   *sftp.Client

	rttMu sync.Mutex
	rtt   time.Duration // 0 until probeRTT has its answer
	// rttDone is closed when probeRTT has its answer or failed.
	rttDone chan struct{}

	// clock notes when bytes last arrived from the node (nil: unknown).
	clock *readClock

	spareMu sync.Mutex
	// spare delivers a session channel opened ahead for the next command
	// (nil: none is being opened); see openSpare.
	spare chan spareSession
	// ahead is the command StartAhead started (nil: none); under spareMu.
	ahead *aheadCmd
}

func newConn(c *ssh.Client, jumps []*ssh.Client, log *slog.Logger) *conn {
	cn := &conn{ssh: c, jumps: jumps, log: log, done: make(chan struct{}), rttDone: make(chan struct{})}
	go func() {
		err := c.Wait()
		cn.mu.Lock()
		if cn.reason == nil {
			cn.reason = err
		}
		cn.mu.Unlock()
		cn.closeJumps()
		close(cn.done)
	}()
	return cn
}

// closeJumps closes the connections to the jump hosts, the last dialled
// first; closing the first one also ends its ProxyCommand.
func (cn *conn) closeJumps() {
	for _, j := range slices.Backward(cn.jumps) {
		j.Close()
	}
}

func (cn *conn) dead() bool {
	select {
	case <-cn.done:
		return true
	default:
		return false
	}
}

// deadWithin waits up to d for the connection to be found dead.
func (cn *conn) deadWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-cn.done:
		return true
	case <-t.C:
		return false
	}
}

// kill closes the connection, recording why.
func (cn *conn) kill(reason error) {
	cn.mu.Lock()
	if cn.reason == nil {
		cn.reason = reason
	}
	cn.mu.Unlock()
	cn.ssh.Close()
	cn.closeJumps()
}

// keepAlive watches what arrives from the server, as OpenSSH's
// ServerAliveInterval does: after an interval with nothing read it asks
// for an answer (keepalive@openssh.com), and once nothing at all has been
// read for keepAliveCountMax intervals it closes the connection. Any bytes
// count, so a busy connection sends no keepalives, and one that waits
// behind other requests (the RTT probe's) is not taken for dead. While a
// command waits ahead for its input (StartAhead, --watch between
// rebuilds), it asks every heardWithin/4 of quiet, so that the command
// stays usable (heardFrom) however long the wait.
func (cn *conn) keepAlive(interval time.Duration, rc *readClock) {
	tick := time.NewTicker(min(interval, heardWithin/4))
	defer tick.Stop()
	limit := interval * keepAliveCountMax
	var asking atomic.Bool
	for {
		select {
		case <-cn.done:
			return
		case <-tick.C:
		}
		quiet := rc.quiet()
		if quiet >= limit {
			cn.log.Debug("ssh server silent, closing connection", "after", quiet)
			cn.kill(fmt.Errorf("server sent nothing for %s, keepalives included", limit))
			return
		}
		due := quiet >= interval || (quiet >= heardWithin/4 && cn.holdsAhead())
		if due && asking.CompareAndSwap(false, true) {
			go func() {
				defer asking.Store(false)
				if _, _, err := cn.ssh.SendRequest("keepalive@openssh.com", true, nil); err != nil {
					cn.kill(fmt.Errorf("keepalive failed: %w", err))
				}
			}()
		}
	}
}

// heardWithin is how recently bytes must have arrived from the node for
// the connection to count as live without a round trip of its own: a
// command started ahead, or a spare session, older than spareFresh is
// used then (see spareFresh for why an old one is not otherwise).
const heardWithin = 2 * spareFresh

// heardFrom reports whether bytes arrived from the node within
// heardWithin.
func (cn *conn) heardFrom() bool {
	return cn.clock != nil && cn.clock.quiet() <= heardWithin
}

// holdsAhead reports whether a command started ahead waits for its input.
func (cn *conn) holdsAhead() bool {
	cn.spareMu.Lock()
	defer cn.spareMu.Unlock()
	return cn.ahead != nil
}

// readClock is a connection that notes when bytes last arrived on it.
type readClock struct {
	net.Conn
	last atomic.Int64 // UnixNano of the last read that returned bytes
}

func newReadClock(c net.Conn) *readClock {
	rc := &readClock{Conn: c}
	rc.last.Store(time.Now().UnixNano())
	return rc
}

func (rc *readClock) Read(p []byte) (int, error) {
	n, err := rc.Conn.Read(p)
	if n > 0 {
		rc.last.Store(time.Now().UnixNano())
	}
	return n, err
}

// quiet is how long nothing has arrived.
func (rc *readClock) quiet() time.Duration {
	return time.Since(time.Unix(0, rc.last.Load()))
}

// openSpare opens a session channel in the background for the next
// command, so that its round trip overlaps what runs meanwhile: the SFTP
// subsystem's start right after connecting, the command before. A spare
// older than spareFresh is replaced. A server
// allows several sessions on a connection (OpenSSH's MaxSessions is 10);
// an unused one ends with the connection.
func (cn *conn) openSpare() {
	cn.spareMu.Lock()
	defer cn.spareMu.Unlock()
	if cn.dead() {
		return
	}
	if cn.spare != nil {
		select {
		case sp := <-cn.spare:
			if sp.s != nil && (time.Since(sp.opened) <= spareFresh || cn.heardFrom()) {
				cn.spare <- sp // fresh, or on a connection heard from: it stays
				return
			}
			if sp.s != nil {
				sp.s.Close()
			}
		default:
			return // on its way
		}
	}
	ch := make(chan spareSession, 1)
	cn.spare = ch
	go func() {
		s, err := cn.ssh.NewSession()
		if err != nil {
			s = nil
		}
		ch <- spareSession{s: s, opened: time.Now()}
	}()
}

// spareSession is a session openSpare opened, and when its channel was
// confirmed.
type spareSession struct {
	s      *ssh.Session
	opened time.Time
}

// spareFresh is how long a spare session stands for a live connection.
// A command on a fresh session of its own learns of a connection that
// dropped while idle when the channel does not open, and is sent again on
// a new connection; one on a spare learns of it only after sending the
// command, when it cannot know whether the node ran it. So a spare serves
// only a command that follows closely on the open (the ops of one run, a
// rebuild swapped by --watch right after Prepare), or one on a connection
// heard from within heardWithin (heardFrom); an older one is closed,
// unless a command started ahead takes it (StartAhead).
const spareFresh = time.Second

// OpenSessionAhead opens, in the background, the session channel of the
// next command on the current connection, when there is one and no
// channel is open or on its way: a caller that runs a command soon (a
// rebuild swapped by --watch once its patch is made) has its channel
// open by then. It never dials.
func (c *Client) OpenSessionAhead() {
	c.mu.Lock()
	cn := c.cur
	c.mu.Unlock()
	if cn != nil {
		cn.openSpare()
	}
}

// takeSpare returns the session openSpare opened, waiting for its
// channel if it is still on its way; nil when there is none, it could
// not be opened or it is older than spareFresh.
func (cn *conn) takeSpare() *ssh.Session {
	cn.spareMu.Lock()
	ch := cn.spare
	cn.spare = nil
	cn.spareMu.Unlock()
	if ch == nil {
		return nil
	}
	sp := <-ch
	if sp.s != nil && ((time.Since(sp.opened) > spareFresh && !cn.heardFrom()) || cn.dead()) {
		sp.s.Close()
		return nil
	}
	return sp.s
}

// rttSamples is how many round trips probeRTT times. Load on either
// machine only adds to a sample (a process waiting for a core), so one
// sample on a busy machine can take loopback for a distant link; the
// least of several is the link's.
const rttSamples = 5

// probeRTT measures the connection's round-trip time, right after the
// handshake and alongside the first op: rttSamples keepalive@openssh.com
// requests in turn, which every server answers (with a failure, which is
// an answer), and the least of their times.
func (cn *conn) probeRTT() {
	defer close(cn.rttDone)
	rtt, ok := leastRTT(rttSamples, time.Now, func() error {
		_, _, err := cn.ssh.SendRequest("keepalive@openssh.com", true, nil)
		return err
	})
	if !ok {
		return
	}
	cn.rttMu.Lock()
	cn.rtt = rtt
	cn.rttMu.Unlock()
}

// leastRTT times up to n calls of roundTrip, one after the other, with
// now, and returns the least time (at least 1 ns); ok is false when the
// first call fails. A later failure ends the samples.
func leastRTT(n int, now func() time.Time, roundTrip func() error) (rtt time.Duration, ok bool) {
	for range n {
		start := now()
		if err := roundTrip(); err != nil {
			break
		}
		d := max(now().Sub(start), time.Nanosecond)
		if !ok || d < rtt {
			rtt, ok = d, true
		}
	}
	return rtt, ok
}

// WaitRTT is RTT once the current connection's measure has its answer:
// it waits for it until ctx is done (ok false then, as when the measure
// failed or there is no connection). The measure is rttSamples round
// trips started as the connection is made, so after an op or two it has
// its answer, unless the machine is too busy to have run them yet.
func (c *Client) WaitRTT(ctx context.Context) (rtt time.Duration, ok bool) {
	cn, err := c.live()
	if cn == nil || err != nil {
		return 0, false
	}
	select {
	case <-cn.rttDone:
	case <-cn.done:
	case <-ctx.Done():
	}
	return c.RTT()
}

// RTT is the round-trip time measured on the current connection; ok is
// false while there is no connection or no answer yet. It never waits.
func (c *Client) RTT() (rtt time.Duration, ok bool) {
	cn, err := c.live()
	if cn == nil || err != nil {
		return 0, false
	}
	cn.rttMu.Lock()
	defer cn.rttMu.Unlock()
	return cn.rtt, cn.rtt > 0
}

// sftpClient opens the SFTP subsystem on first use (startSFTP, else the
// usual way).
func (cn *conn) sftpClient() (*sftp.Client, error) {
	cn.sftpMu.Lock()
	defer cn.sftpMu.Unlock()
	if cn.sftp != nil {
		return cn.sftp, nil
	}
	sc, err := cn.startSFTP()
	if err != nil {
		sc, err = sftp.NewClient(cn.ssh, sftpOptions...)
		if err != nil {
			return nil, fmt.Errorf("start sftp subsystem: %w", err)
		}
	}
	cn.sftp = sc
	return sc, nil
}

// sftpOptions pipeline a file's reads and writes.
var sftpOptions = []sftp.ClientOption{
	sftp.UseConcurrentWrites(true),
	sftp.UseConcurrentReads(true),
	sftp.MaxConcurrentRequestsPerFile(64),
}

// startSFTP starts the subsystem in two round trips where pkg/sftp's own
// start takes three: as QuickStat does, it asks for the subsystem without
// waiting for the answer and sends SFTP's INIT right behind it. A server
// that cannot start the subsystem says nothing to a request that asked for
// no answer: after quickStatWait without SFTP's VERSION it gives up, and
// the caller takes the usual way, whose answer (or error) is then the
// server's.
func (cn *conn) startSFTP() (*sftp.Client, error) {
	ch, reqs, err := cn.ssh.OpenChannel("session", nil)
	if err != nil {
		return nil, err
	}
	go ssh.DiscardRequests(reqs)
	go func() { _, _ = io.Copy(io.Discard, ch.Stderr()) }()
	if _, err := ch.SendRequest("subsystem", false, ssh.Marshal(struct{ Name string }{"sftp"})); err != nil {
		ch.Close()
		return nil, err
	}
	type started struct {
		sc  *sftp.Client
		err error
	}
	res := make(chan started, 1)
	go func() {
		sc, err := sftp.NewClientPipe(ch, ch, sftpOptions...)
		res <- started{sc, err}
	}()
	t := time.NewTimer(quickStatWait)
	defer t.Stop()
	select {
	case r := <-res:
		if r.err != nil {
			ch.Close()
		}
		return r.sc, r.err
	case <-t.C:
		// Closing ends NewClientPipe's wait once the server answers the
		// close or the connection ends; the caller does not wait for that.
		ch.Close()
		go func() {
			if r := <-res; r.sc != nil {
				r.sc.Close()
			}
		}()
		return nil, fmt.Errorf("no SFTP answer within %s", quickStatWait)
	}
}

// lost reports whether err means the connection under cn dropped; if so,
// cn is closed for good so the next call reconnects.
func (cn *conn) lost(err error) bool {
	if err == nil {
		return false
	}
	var se *sftp.StatusError
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission), errors.Is(err, fs.ErrExist):
		// The server answered (pkg/sftp maps its status codes to these).
		return false
	case errors.Is(err, sftp.ErrSSHFxConnectionLost), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
	case errors.As(err, &se), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return cn.dead()
	default:
		// io.EOF and friends are ambiguous: let the connection tell.
		if !cn.deadWithin(250 * time.Millisecond) {
			return false
		}
	}
	cn.kill(err)
	return true
}

// do runs fn, returning when it does or, once ctx ends, after a short
// grace period; a call still stuck then has its connection torn down.
func do(ctx context.Context, cn *conn, fn func() error) error {
	if ctx.Done() == nil {
		return fn()
	}
	res := make(chan error, 1)
	go func() { res <- fn() }()
	select {
	case err := <-res:
		return err
	case <-ctx.Done():
	}
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case err := <-res:
		if err == nil {
			return nil
		}
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	case <-t.C:
		cn.kill(fmt.Errorf("call abandoned: %w", ctx.Err()))
		return ctx.Err()
	}
}

// Exec runs cmd on the node without a PTY, copying stdin to it (then
// closing its stdin, so scripts that read to EOF end) and its output to
// stdout and stderr (nil discards). It returns the remote exit status; a
// non-zero status is not an error. When ctx ends the remote command is
// signalled, its session closed, and Exec returns promptly with ctx's
// error. Exec never retries the command; a dead connection is replaced
// before the session opens. stdin must not block forever. Its errors say
// what happened to the connection, not which command ran: the caller
// knows, and the debug log has it.
func (c *Client) Exec(ctx context.Context, cmd string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	if cn, _ := c.live(); cn != nil {
		if st := cn.takeAhead(ctx, cmd); st != nil {
			c.log.Debug("ssh exec, started ahead", "addr", c.t.addr, "cmd", shorten(cmd))
			return c.finish(ctx, cn, st.s, st.feed(stdin, stdout, stderr))
		}
	}
	sess, cn, err := c.session(ctx)
	if err != nil {
		return -1, err
	}
	sess.Stdin, sess.Stdout, sess.Stderr = stdin, stdout, stderr
	c.log.Debug("ssh exec", "addr", c.t.addr, "cmd", shorten(cmd))
	if err := sess.Start(cmd); err != nil {
		sess.Close()
		if cn.lost(err) {
			err = fmt.Errorf("%w: %w", ErrConnectionLost, err)
		}
		return -1, fmt.Errorf("start the command: %w", err)
	}
	return c.finish(ctx, cn, sess, sess.Wait)
}

// finish waits for the command started on sess to end (wait), opening
// the next command's channel meanwhile, and returns its exit status;
// when ctx ends first the command is signalled and its session closed.
// sess is closed on return.
func (c *Client) finish(ctx context.Context, cn *conn, sess *ssh.Session, wait func() error) (int, error) {
	defer sess.Close()
	// The next command's channel opens while this one runs.
	cn.openSpare()
	waited := make(chan error, 1)
	go func() { waited <- wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = sess.Signal(ssh.SIGKILL)
		sess.Close()
		t := time.NewTimer(cancelGrace)
		select {
		case <-waited:
		case <-t.C:
		}
		t.Stop()
		return -1, ctx.Err()
	}
	var ee *ssh.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &ee):
		return ee.ExitStatus(), nil
	case errors.Is(err, io.EOF) && !cn.dead():
		// A status of 0 came back (Wait returns a copy's error only
		// then); stdin's copy then wrote to the channel the server had
		// closed: the command did not read all of its input.
		return 0, nil
	}
	if cn.lost(err) || cn.dead() {
		return -1, fmt.Errorf("%w (the command may or may not have completed): %w", ErrConnectionLost, err)
	}
	return -1, err
}

var sessionRetry = retry.Policy{
	Tries:       2,
	Pause:       100 * time.Millisecond,
	ShouldRetry: func(err error) bool { return errors.Is(err, ErrConnectionLost) },
}

func shorten(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
