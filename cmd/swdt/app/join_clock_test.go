package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/swdt/pkg/exitcode"
	"sigs.k8s.io/swdt/pkg/simnode"
)

// A VM whose clock is minutes behind the laptop's joins, and a changed
// join (new taints: the kubelet restarts) is confirmed: the Lease's
// renewals, stamped with the node's clock, are compared with renewals
// seen earlier, never with the laptop's time.
func TestJoinNodeClockBehind(t *testing.T) {
	fx := newJoinFixture(t, simnode.WithOptions(func(o *simnode.Options) { o.ClockOffset = -10 * time.Minute }))
	shorten := func() {
		raw, err := os.ReadFile(fx.config)
		if err != nil {
			t.Fatal(err)
		}
		// The Node shows within seconds; a wait for a renewal after
		// the laptop's time would never end.
		raw = bytes.Replace(raw, []byte("timeout: 90s"), []byte("timeout: 30s"), 1)
		if err := os.WriteFile(fx.config, raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	shorten()
	code, doc, errOut := fx.run("join")
	if code != exitcode.OK || doc.Nodes[0].Result != "changed" || !doc.Nodes[0].Node.Registered {
		t.Fatalf("join of a node 10 minutes behind: exit %d\n%s", code, errOut)
	}
	if renewed := doc.Nodes[0].Node.LeaseRenewed; !renewed.Before(time.Now().Add(-5 * time.Minute)) {
		t.Fatalf("the Lease was renewed at %s: the node's clock is not behind (the model)", renewed)
	}

	raw, err := os.ReadFile(fx.config)
	if err != nil {
		t.Fatal(err)
	}
	raw = bytes.Replace(raw, []byte(`taints: ["os=windows:NoSchedule"]`), []byte(`taints: ["os=windows:NoExecute"]`), 1)
	if err := os.WriteFile(fx.config, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, doc, errOut = fx.run("join")
	if code != exitcode.OK || doc.Nodes[0].Result != "changed" {
		t.Fatalf("changed join of a node 10 minutes behind: exit %d\n%s", code, errOut)
	}

	// A kubelet swap is confirmed by the cluster the same way: renewals
	// after the one seen right after the swap.
	fx.kubelet("v1.37.1")
	fx.write(fx.cl.Kubeconfig, "v1.37.1")
	shorten()
	var out, errb bytes.Buffer
	if code := Run(context.Background(), Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errb},
		[]string{"kubernetes", "-c", fx.config, "--no-color", "--cache-dir", filepath.Join(fx.dir, "cache")}); code != exitcode.OK {
		t.Fatalf("swap on a node 10 minutes behind: exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "confirmed kubelet v1.37.1") {
		t.Errorf("the swap was not confirmed by the cluster:\n%s", errb.String())
	}
}
