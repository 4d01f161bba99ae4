//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"sigs.k8s.io/swdt/internal/clustertest"
	simnodes "sigs.k8s.io/swdt/pkg/simnode"
)

// rolloutScale rolls kubelet builds with bin/swdt rollout over the
// Kubernetes transport across -rollout-nodes counts of Windows Nodes, by
// each -rollout-max maxUnavailable not above the count: a real
// kube-apiserver and kube-controller-manager (the cluster tier's), and
// bare simnodes in this process whose simulated kubelets run swdt's
// HostProcess agent pods and serve their exec. Each count's Nodes are the
// first of the next count's. Every row is -rollout-rounds rollouts of a
// new build to every Node, their agent pods already running (one untimed
// rollout after Nodes join), against its goal: ceil(N / maxUnavailable)
// times the time of one Node alone, and the peak RSS of one Node alone.
func (b *bench) rolloutScale() (err error) {
	if reason := clusterMissing(); reason != "" {
		b.add("rollout scale", "skipped: "+reason, "")
		return nil
	}
	counts, err := ints(b.o.rolloutNodes)
	if err != nil {
		return fmt.Errorf("-rollout-nodes: %w", err)
	}
	maxes, err := ints(b.o.rolloutMax)
	if err != nil {
		return fmt.Errorf("-rollout-max: %w", err)
	}
	slices.Sort(counts)
	counts = slices.Compact(counts)
	fx := newFixture(b.dir)
	defer fx.close()
	defer catch(&err)
	fmt.Fprintf(os.Stderr, "bench: rollout scale, %v Nodes by maxUnavailable %v\n", counts, maxes)
	cl := clustertest.Start(fx)
	r := &roller{b: b, kubeconfig: cl.Kubeconfig, cache: filepath.Join(b.dir, "rollout-cache")}
	var one *rolloutRow
	joined := 0
	for _, n := range counts {
		for ; joined < n; joined++ {
			cl.StartKubeletNode(fx, fmt.Sprintf("win-b%02d", joined+1))
		}
		// The agent pods of the Nodes that joined start here, untimed.
		if _, err := r.roll(n, min(n, slices.Max(maxes))); err != nil {
			return fmt.Errorf("rollout scale, %d Nodes, first rollout: %w", n, err)
		}
		for _, mu := range maxes {
			if mu > n {
				continue
			}
			row := &rolloutRow{nodes: n, maxUnavailable: mu}
			for range b.o.rolloutRounds {
				m, err := r.roll(n, mu)
				if err != nil {
					return fmt.Errorf("rollout scale, %d Nodes, maxUnavailable %d: %w", n, mu, err)
				}
				row.wall, row.rss = append(row.wall, m.Wall), append(row.rss, m.MaxRSSKB)
			}
			if one == nil && n == 1 && mu == 1 {
				one = row
			}
			b.add(fmt.Sprintf("rollout: %d Nodes, maxUnavailable %d (Kubernetes API, in-process kubelets)", n, mu),
				fmt.Sprintf("%s; peak RSS %s", row.wall, row.rss), row.goal(one))
		}
	}
	return nil
}

// clusterMissing says why the control plane cannot start here, or "".
func clusterMissing() string {
	for _, p := range []string{clustertest.EtcdPath, filepath.Join(clustertest.BinDir(), "kube-apiserver"),
		filepath.Join(clustertest.BinDir(), "kube-controller-manager")} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Sprintf("%s missing (set SWDT_CLUSTER_BIN; make test-deps cluster-bins)", p)
		}
	}
	return ""
}

// rolloutRow is one row: the runs of N Nodes by one maxUnavailable.
type rolloutRow struct {
	nodes, maxUnavailable int
	wall                  series
	rss                   rssSeries
}

// batches is how many rounds of at most maxUnavailable Nodes a rollout
// of the row's Nodes takes: ceil(N / maxUnavailable).
func (r *rolloutRow) batches() int {
	return (r.nodes + r.maxUnavailable - 1) / r.maxUnavailable
}

// goal is the row against one Node alone (nil: none measured): its time
// against batches() times one Node's median, and its median peak RSS
// against one Node's.
func (r *rolloutRow) goal(one *rolloutRow) string {
	if one == nil {
		return "no 1-Node row to compare with"
	}
	want := time.Duration(r.batches()) * one.wall.med()
	return fmt.Sprintf("time <= %d x %s = %s: %s; RSS flat: %s of 1 Node's",
		r.batches(), secs(one.wall.med()), secs(want), ratio(r.wall.med(), want), rssRatio(r.rss.med(), one.rss.med()))
}

// med is the median peak RSS in kB.
func (s rssSeries) med() int64 {
	c := slices.Clone(s)
	slices.Sort(c)
	if len(c) == 0 {
		return 0
	}
	if len(c)%2 == 0 {
		return (c[len(c)/2-1] + c[len(c)/2]) / 2
	}
	return c[len(c)/2]
}

func rssRatio(a, b int64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}

// roller runs bin/swdt rollout against the bench's control plane, each
// time a new kubelet build.
type roller struct {
	b          *bench
	kubeconfig string
	cache      string
	build      int
}

// roll rolls a new build over every Windows Node (n of them) with
// maxUnavailable mu, timed by execwrap, and checks that every Node took
// it.
func (r *roller) roll(n, mu int) (measured, error) {
	r.build++
	version := fmt.Sprintf("v1.37.%d", 100+r.build)
	src := filepath.Join(r.b.dir, "kubelet-rollout.exe")
	if err := os.WriteFile(src, simnodes.KubeletBinary(version), 0o644); err != nil {
		return measured{}, err
	}
	file := filepath.Join(r.b.dir, "rollout.yaml")
	doc := fmt.Sprintf(`apiVersion: windows.k8s.io/v1alpha1
kind: Node
metadata:
  name: bench
spec:
  kubernetes:
    provisioners:
    - name: kubelet
      version: %s
      sourceURL: %q
      destination: %q
    rollout:
      kubeconfig: %q
      maxUnavailable: %d
      timeout: 1m
`, version, src, clustertest.KubeletPath, r.kubeconfig, mu)
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		return measured{}, err
	}
	var stdout bytes.Buffer
	m, err := r.b.timed(&stdout, nil, r.b.o.swdt, "rollout", "-c", file, "-o", "json", "--cache-dir", r.cache, "--settle", "0")
	if err != nil {
		return measured{}, err
	}
	var rep struct {
		Nodes []struct {
			Name    string `json:"name"`
			Result  string `json:"result"`
			Kubelet string `json:"kubelet"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return measured{}, fmt.Errorf("swdt rollout -o json: %w", err)
	}
	if len(rep.Nodes) != n {
		return measured{}, fmt.Errorf("swdt rollout rolled %d Nodes, want %d", len(rep.Nodes), n)
	}
	for _, nd := range rep.Nodes {
		if nd.Result != "changed" || nd.Kubelet != version {
			return measured{}, fmt.Errorf("Node %s: %s, kubelet %s; want changed to %s", nd.Name, nd.Result, nd.Kubelet, version)
		}
	}
	return m, nil
}
