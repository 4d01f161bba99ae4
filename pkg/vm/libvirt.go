package vm

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/internal/retry"
)

// stopPoll is how often Stop looks whether a shutting-down VM is off.
const stopPoll = 500 * time.Millisecond

// libvirtVM is one libvirt domain behind one connection to libvirtd.
type libvirtVM struct {
	name string
	uri  string // as the user wrote it, for messages
	lv   *golibvirt.Libvirt
	dom  golibvirt.Domain
	// conn is the stream to libvirtd; closing it unblocks every pending
	// call, which is how a ctx ends a call that go-libvirt cannot cancel.
	conn    net.Conn
	closeFn func() // closes what conn runs over (an SSH connection)

	mu sync.Mutex // one call at a time: go-libvirt calls are not bounded
}

// openLibvirt dials libvirtd as spec.libvirt.uri says, opens the driver
// and looks the domain up.
func openLibvirt(ctx context.Context, spec *v1alpha1.VMSpec, creds v1alpha1.CredentialsSpec, opts Options) (Provider, error) {
	uri := v1alpha1.DefaultLibvirtURI
	if spec.Libvirt != nil && spec.Libvirt.URI != "" {
		uri = spec.Libvirt.URI
	}
	target, err := parseLibvirtURI(uri)
	if err != nil {
		return nil, usage(fmt.Errorf("VM %q: spec.vm.libvirt.uri: %w", spec.Name, err))
	}
	v := &libvirtVM{name: spec.Name, uri: target.display}
	dctx, cancel := context.WithTimeout(ctx, opts.dialTimeout())
	defer cancel()
	conn, closeFn, err := target.dial(dctx, creds, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", v.Describe(), ErrUnreachable, err)
	}
	v.conn, v.closeFn = conn, closeFn
	v.lv = golibvirt.NewWithDialer(dialers.NewAlreadyConnected(conn))
	err = v.do(dctx, "connect", func() error { return v.lv.ConnectToURI(target.driver) })
	if err != nil {
		v.closeTransport()
		return nil, fmt.Errorf("%s: %w: libvirtd refused driver %s: %w", v.Describe(), ErrUnreachable, target.driver, err)
	}
	err = v.do(ctx, "look up the domain", func() (err error) {
		v.dom, err = v.lv.DomainLookupByName(spec.Name)
		return err
	})
	if err != nil {
		_ = v.Close()
		if golibvirt.IsNotFound(err) {
			return nil, usage(fmt.Errorf("%s: %w: check spec.vm.name against 'virsh -c %s list --all'", v.Describe(), ErrVMNotFound, target.display))
		}
		return nil, err
	}
	return v, nil
}

func (v *libvirtVM) Describe() string {
	return fmt.Sprintf("VM %q (libvirt %s)", v.name, v.uri)
}

// do runs one go-libvirt call, bounded by ctx: when ctx ends first, the
// connection is closed so that the call returns, and the VM can no longer
// be used.
func (v *libvirtVM) do(ctx context.Context, what string, fn func() error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %s: %w", v.Describe(), what, err)
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s: %s: %w", v.Describe(), what, err)
		}
		return nil
	case <-ctx.Done():
		_ = v.conn.Close()
		<-done
		return fmt.Errorf("%s: %s: libvirtd did not answer in time: %w", v.Describe(), what, ctx.Err())
	}
}

func (v *libvirtVM) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := v.do(ctx, "disconnect", v.lv.Disconnect)
	v.closeTransport()
	return err
}

func (v *libvirtVM) closeTransport() {
	_ = v.conn.Close()
	if v.closeFn != nil {
		v.closeFn()
	}
}

func (v *libvirtVM) state(ctx context.Context) (State, error) {
	var st int32
	err := v.do(ctx, "read the state", func() (err error) {
		st, _, err = v.lv.DomainGetState(v.dom, 0)
		return err
	})
	return libvirtState(golibvirt.DomainState(st)), err
}

func libvirtState(s golibvirt.DomainState) State {
	switch s {
	case golibvirt.DomainRunning, golibvirt.DomainBlocked:
		return StateRunning
	case golibvirt.DomainPaused:
		return StatePaused
	case golibvirt.DomainShutdown:
		return StateStopping
	case golibvirt.DomainShutoff:
		return StateOff
	case golibvirt.DomainCrashed:
		return StateCrashed
	case golibvirt.DomainPmsuspended:
		return StateSaved
	}
	return StateOther
}

func (v *libvirtVM) Status(ctx context.Context) (Status, error) {
	st := Status{Name: v.name, Provider: v1alpha1.VMProviderLibvirt, Hypervisor: v.uri}
	var err error
	if st.State, err = v.state(ctx); err != nil {
		return st, err
	}
	snaps, err := v.Snapshots(ctx)
	if err != nil {
		return st, err
	}
	st.Snapshots = len(snaps)
	for _, s := range snaps {
		if s.Current {
			st.CurrentSnapshot = s.Name
		}
	}
	return st, nil
}

func (v *libvirtVM) Start(ctx context.Context) (bool, error) {
	st, err := v.state(ctx)
	if err != nil {
		return false, err
	}
	switch st {
	case StateRunning:
		return true, nil
	case StatePaused:
		return false, v.do(ctx, "resume", func() error { return v.lv.DomainResume(v.dom) })
	case StateSaved:
		return false, v.do(ctx, "wake up", func() error { return v.lv.DomainPmWakeup(v.dom, 0) })
	}
	return false, v.do(ctx, "start", func() error { return v.lv.DomainCreate(v.dom) })
}

func (v *libvirtVM) Stop(ctx context.Context, timeout time.Duration) (Stopped, error) {
	st, err := v.state(ctx)
	if err != nil {
		return Stopped{}, err
	}
	if st == StateOff || st == StateCrashed {
		return Stopped{AlreadyOff: true}, nil
	}
	// A guest that cannot be asked (no ACPI, no agent) is turned off
	// straight away, as after a timeout.
	if err := v.do(ctx, "shut down", func() error { return v.lv.DomainShutdown(v.dom) }); err == nil {
		wait, cancel := context.WithTimeout(ctx, timeout)
		err := retry.Poll(wait, stopPoll, func(ctx context.Context) (bool, error) {
			st, err := v.state(ctx)
			return st == StateOff, err
		})
		cancel()
		switch {
		case err == nil:
			return Stopped{}, nil
		case ctx.Err() != nil:
			return Stopped{}, fmt.Errorf("%s: wait for the shutdown: %w", v.Describe(), ctx.Err())
		case wait.Err() == nil:
			return Stopped{}, err
		}
	}
	if err := v.do(ctx, "turn off", func() error { return v.lv.DomainDestroy(v.dom) }); err != nil {
		return Stopped{}, err
	}
	return Stopped{Forced: true}, nil
}

// snapshotXML is the part of libvirt's <domainsnapshot> document swdt
// writes and reads.
type snapshotXML struct {
	XMLName      xml.Name `xml:"domainsnapshot"`
	Name         string   `xml:"name"`
	Description  string   `xml:"description,omitempty"`
	CreationTime int64    `xml:"creationTime,omitempty"`
	Parent       *struct {
		Name string `xml:"name"`
	} `xml:"parent,omitempty"`
}

func (v *libvirtVM) lookupSnapshot(ctx context.Context, name string) (golibvirt.DomainSnapshot, bool, error) {
	var snap golibvirt.DomainSnapshot
	err := v.do(ctx, "look up snapshot "+name, func() (err error) {
		snap, err = v.lv.DomainSnapshotLookupByName(v.dom, name, 0)
		return err
	})
	if isLibvirtError(err, golibvirt.ErrNoDomainSnapshot) {
		return snap, false, nil
	}
	return snap, err == nil, err
}

func (v *libvirtVM) Snapshot(ctx context.Context, name string) error {
	if err := CheckSnapshotName(name); err != nil {
		return err
	}
	if _, found, err := v.lookupSnapshot(ctx, name); err != nil {
		return err
	} else if found {
		return usage(fmt.Errorf("%s: %w: %s; choose another name or revert to it", v.Describe(), ErrSnapshotExists, name))
	}
	doc, err := xml.Marshal(snapshotXML{Name: name, Description: "taken by swdt"})
	if err != nil {
		return fmt.Errorf("%s: snapshot %s: %w", v.Describe(), name, err)
	}
	return v.do(ctx, "take snapshot "+name, func() error {
		_, err := v.lv.DomainSnapshotCreateXML(v.dom, string(doc), 0)
		return err
	})
}

func (v *libvirtVM) Revert(ctx context.Context, name string) (State, error) {
	snap, found, err := v.lookupSnapshot(ctx, name)
	if err != nil {
		return "", err
	}
	if !found {
		return "", usage(fmt.Errorf("%s: %w: %s; 'swdt vm snapshots' lists them", v.Describe(), ErrSnapshotNotFound, name))
	}
	if err := v.do(ctx, "revert to snapshot "+name, func() error { return v.lv.DomainRevertToSnapshot(snap, 0) }); err != nil {
		return "", err
	}
	return v.state(ctx)
}

func (v *libvirtVM) Snapshots(ctx context.Context) ([]Snapshot, error) {
	var snaps []golibvirt.DomainSnapshot
	err := v.do(ctx, "list snapshots", func() (err error) {
		// Topological: a parent before its children, which the stable sort
		// by creation time keeps for snapshots taken in the same second.
		snaps, _, err = v.lv.DomainListAllSnapshots(v.dom, 1, uint32(golibvirt.DomainSnapshotListTopological))
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Snapshot, 0, len(snaps))
	for _, s := range snaps {
		var (
			desc    string
			current int32
		)
		err := v.do(ctx, "read snapshot "+s.Name, func() (err error) {
			if desc, err = v.lv.DomainSnapshotGetXMLDesc(s, 0); err != nil {
				return err
			}
			current, err = v.lv.DomainSnapshotIsCurrent(s, 0)
			return err
		})
		if err != nil {
			return nil, err
		}
		var doc snapshotXML
		if err := xml.Unmarshal([]byte(desc), &doc); err != nil {
			return nil, fmt.Errorf("%s: read snapshot %s: %w", v.Describe(), s.Name, err)
		}
		snap := Snapshot{Name: s.Name, Created: time.Unix(doc.CreationTime, 0).UTC(), Current: current == 1}
		if doc.Parent != nil {
			snap.Parent = doc.Parent.Name
		}
		out = append(out, snap)
	}
	slices.SortStableFunc(out, func(a, b Snapshot) int { return a.Created.Compare(b.Created) })
	return out, nil
}

// addressSources are asked in turn; the first that knows an address wins.
var addressSources = []struct {
	src  golibvirt.DomainInterfaceAddressesSource
	name string
}{
	{golibvirt.DomainInterfaceAddressesSrcLease, "lease"},
	{golibvirt.DomainInterfaceAddressesSrcAgent, "agent"},
	{golibvirt.DomainInterfaceAddressesSrcArp, "arp"},
}

// Addresses asks libvirt for DHCP leases of its networks, then the guest
// agent, then the host's ARP table. A source that cannot answer (no agent
// in the guest, a bridge without libvirt's DHCP) is skipped: that is
// normal while a guest boots.
func (v *libvirtVM) Addresses(ctx context.Context) ([]Address, error) {
	for _, s := range addressSources {
		var ifaces []golibvirt.DomainInterface
		err := v.do(ctx, "read addresses ("+s.name+")", func() (err error) {
			ifaces, err = v.lv.DomainInterfaceAddresses(v.dom, uint32(s.src), 0)
			return err
		})
		if err != nil {
			if ctx.Err() != nil || !v.lv.IsConnected() {
				return nil, err
			}
			continue
		}
		var out []Address
		for _, iface := range ifaces {
			mac := ""
			if len(iface.Hwaddr) > 0 {
				mac = iface.Hwaddr[0]
			}
			for _, a := range iface.Addrs {
				if ip := net.ParseIP(a.Addr); ip == nil || ip.IsLoopback() {
					continue
				}
				out = append(out, Address{Interface: iface.Name, MAC: mac, IP: a.Addr, Source: s.name})
			}
		}
		if out = sortAddresses(out); len(out) > 0 {
			return out, nil
		}
	}
	return nil, nil
}

// isLibvirtError reports whether err carries libvirt's error number code.
func isLibvirtError(err error, code golibvirt.ErrorNumber) bool {
	var lerr golibvirt.Error
	return errors.As(err, &lerr) && lerr.Code == uint32(code)
}
