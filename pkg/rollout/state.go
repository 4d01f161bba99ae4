package rollout

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"sigs.k8s.io/swdt/pkg/kubeconn"
)

// The rollout's state lives in the cluster, not on the machine that runs
// swdt: a ConfigMap swdt-rollout-NAME in swdt's namespace, whose key
// state holds a State as JSON. Another machine with the same node file
// and build resumes from it.
const (
	// Namespace holds swdt's objects in the cluster: the rollouts'
	// state and the Kubernetes transport's pods, in one namespace that
	// allows them (kubeconn.NewNamespace).
	Namespace = kubeconn.DefaultNamespace
	// StateKey is the ConfigMap's key of the state.
	StateKey = "state"
	// LabelRollout marks the ConfigMap with the rollout's name.
	LabelRollout = "swdt.k8s.io/rollout"
)

// ConfigMapName is the name of the ConfigMap of the rollout name.
func ConfigMapName(name string) string { return "swdt-rollout-" + name }

// State is what a rollout records in the cluster.
type State struct {
	// Build identifies what is rolled: the provisioners' names,
	// destinations and sources' SHA-256. A run of another build starts
	// over.
	Build string `json:"build"`
	// Started is when the rollout of this build began.
	Started time.Time `json:"started"`
	// Nodes are the Nodes touched so far, by name.
	Nodes map[string]NodeState `json:"nodes"`
}

// Phases of a Node in the state.
const (
	// PhaseSwapping: the Node's drain or swap began and did not end (a
	// run cut short): a resumed run does it again.
	PhaseSwapping = "swapping"
	// PhaseDone: the Node runs the build, confirmed by the cluster.
	PhaseDone = "done"
	// PhaseFailed: the build failed there (rolled back, or not).
	PhaseFailed = "failed"
)

// NodeState is one Node's entry in the state.
type NodeState struct {
	// Phase is swapping, done or failed.
	Phase string `json:"phase"`
	// Cordoned is true when swdt cordoned the Node and has not
	// uncordoned it yet.
	Cordoned bool `json:"cordoned,omitempty"`
	// Error says why it failed.
	Error string `json:"error,omitempty"`
	// Updated is when the entry last changed.
	Updated time.Time `json:"updated"`
}

// store keeps the state in its ConfigMap; its methods are safe for
// concurrent use.
type store struct {
	client kubernetes.Interface
	name   string
	dryRun bool

	mu    sync.Mutex
	state State
}

// build identifies the rolled items.
func (r *run) build() string {
	h := sha256.New()
	for _, it := range r.items {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", strings.ToLower(it.Name), strings.ToLower(it.Destination), strings.ToLower(it.Source.SHA256))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// loadState reads the rollout's state: an earlier run of the same build
// is resumed (Report.Resumed); another build starts over, keeping only
// which Nodes swdt cordoned.
func (r *run) loadState(ctx context.Context) error {
	s := &store{client: r.opts.Cluster.Client(), name: ConfigMapName(r.node.Name), dryRun: r.opts.DryRun}
	build := r.build()
	cm, err := s.client.CoreV1().ConfigMaps(Namespace).Get(ctx, s.name, metav1.GetOptions{})
	var prev State
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read the rollout's state (ConfigMap %s/%s): %w", Namespace, s.name, err)
	default:
		if err := json.Unmarshal([]byte(cm.Data[StateKey]), &prev); err != nil {
			return fmt.Errorf("the rollout's state (ConfigMap %s/%s, key %s) is not what swdt wrote: %w; delete it to start over", Namespace, s.name, StateKey, err)
		}
	}
	s.state = State{Build: build, Started: time.Now().UTC(), Nodes: map[string]NodeState{}}
	if prev.Build == build {
		r.report.Resumed = len(prev.Nodes) > 0
		s.state = prev
		if s.state.Nodes == nil {
			s.state.Nodes = map[string]NodeState{}
		}
	} else {
		for name, ns := range prev.Nodes {
			if ns.Cordoned {
				s.state.Nodes[name] = NodeState{Phase: PhaseSwapping, Cordoned: true, Updated: ns.Updated}
			}
		}
	}
	r.state = s
	if s.dryRun {
		return nil
	}
	return s.save(ctx)
}

// done reports whether the Node runs the build already.
func (s *store) done(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Nodes[name].Phase == PhaseDone
}

// cordoned reports whether swdt cordoned the Node.
func (s *store) cordoned(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state.Nodes[name].Cordoned
}

// update changes the Node's entry and writes the state.
func (s *store) update(ctx context.Context, name string, fn func(ns *NodeState)) error {
	s.mu.Lock()
	ns := s.state.Nodes[name]
	fn(&ns)
	ns.Updated = time.Now().UTC()
	s.state.Nodes[name] = ns
	s.mu.Unlock()
	return s.save(ctx)
}

// saveTimeout bounds a write of the state, which outlives the run's
// context: an interrupted run still records where it stopped.
const saveTimeout = 30 * time.Second

// save writes the state to its ConfigMap, creating the namespace and the
// ConfigMap when missing.
func (s *store) save(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	s.mu.Lock()
	data, err := json.Marshal(s.state)
	s.mu.Unlock()
	if err != nil {
		return fmt.Errorf("encode the rollout's state: %w", err)
	}
	cms := s.client.CoreV1().ConfigMaps(Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, s.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			if err := ensureNamespace(ctx, s.client); err != nil {
				return err
			}
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: Namespace,
				Labels: map[string]string{LabelRollout: strings.TrimPrefix(s.name, "swdt-rollout-")}},
				Data: map[string]string{StateKey: string(data)}}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[StateKey] = string(data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("write the rollout's state (ConfigMap %s/%s): %w", Namespace, s.name, err)
	}
	return nil
}

// ensureNamespace creates swdt's namespace when it does not exist, as
// the Kubernetes transport creates it: labelled as swdt's and for the
// privileged Pod Security level that its HostProcess pods need.
func ensureNamespace(ctx context.Context, client kubernetes.Interface) error {
	_, err := client.CoreV1().Namespaces().Create(ctx, kubeconn.NewNamespace(Namespace), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", Namespace, err)
	}
	return nil
}
