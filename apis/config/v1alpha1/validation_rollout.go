package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateRollout checks spec.kubernetes.rollout against the
// provisioners it names.
func validateRollout(k *KubernetesSpec, p *field.Path) field.ErrorList {
	r := k.Rollout
	var errs field.ErrorList
	if r.Selector != nil {
		if _, err := metav1.LabelSelectorAsSelector(r.Selector); err != nil {
			errs = append(errs, field.Invalid(p.Child("selector"), r.Selector, err.Error()))
		}
	}
	if len(k.Provisioners) == 0 {
		errs = append(errs, field.Required(p.Root().Child("spec", "kubernetes", "provisioners"), "a rollout swaps provisioners: list at least one"))
	}
	for i, name := range r.Provisioners {
		if provisionerNamed(k, name) == nil {
			errs = append(errs, field.NotFound(p.Child("provisioners").Index(i), name))
		}
	}
	if m := r.MaxUnavailable; m != nil {
		if _, err := MaxUnavailable(m, 100); err != nil {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), m.String(), err.Error()))
		}
	}
	if r.Timeout != nil && r.Timeout.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("timeout"), r.Timeout.Duration.String(), "must be positive"))
	}
	if d := r.Drain; d != nil {
		if d.Timeout != nil && d.Timeout.Duration <= 0 {
			errs = append(errs, field.Invalid(p.Child("drain", "timeout"), d.Timeout.Duration.String(), "must be positive"))
		}
		if g := d.GracePeriodSeconds; g != nil && *g < 0 {
			errs = append(errs, field.Invalid(p.Child("drain", "gracePeriodSeconds"), *g, "must be 0 or more"))
		}
	}
	return errs
}

// validateTransport checks the rollout's transport against what it uses:
// the Kubernetes transport reaches Nodes through the API server and
// takes no SSH credentials; SSH takes them and has no pod image.
func validateTransport(r *RolloutSpec, c *CredentialsSpec, spec *field.Path) field.ErrorList {
	p := spec.Child("kubernetes", "rollout")
	var errs field.ErrorList
	switch r.Transport {
	case TransportKubernetes:
		if *c != (CredentialsSpec{}) {
			errs = append(errs, field.Forbidden(spec.Child("credentials"),
				"the Kubernetes transport reaches each Node through the API server and uses no SSH credentials: remove spec.credentials, or set spec.kubernetes.rollout.transport: SSH"))
		}
		if r.Image != "" && (hasSpaceOrControl(r.Image) || strings.HasPrefix(r.Image, "-")) {
			errs = append(errs, field.Invalid(p.Child("image"), r.Image, "must be an image reference, such as registry.example.com/windows-host-process-containers-base-image:v1.0.0"))
		}
	case TransportSSH:
		if r.Image != "" {
			errs = append(errs, field.Forbidden(p.Child("image"), "the SSH transport runs no pod: remove image, or set transport: Kubernetes"))
		}
	default:
		errs = append(errs, field.NotSupported(p.Child("transport"), r.Transport, []Transport{TransportKubernetes, TransportSSH}))
	}
	return errs
}

// provisionerNamed is the provisioner of k called name (as Windows
// compares names), or nil.
func provisionerNamed(k *KubernetesSpec, name string) *ProvisionerSpec {
	for i := range k.Provisioners {
		if strings.EqualFold(k.Provisioners[i].Name, name) {
			return &k.Provisioners[i]
		}
	}
	return nil
}

// MaxUnavailable is how many of total Nodes a rollout swaps at once: m
// (nil: 1) as a number, or as a percentage of total rounded down, and
// never less than 1.
func MaxUnavailable(m *intstr.IntOrString, total int) (int, error) {
	if m == nil {
		return 1, nil
	}
	if m.Type == intstr.Int {
		if m.IntVal < 1 {
			return 0, fmt.Errorf("must be at least 1")
		}
		return int(m.IntVal), nil
	}
	pct, ok := strings.CutSuffix(m.StrVal, "%")
	v, err := strconv.Atoi(pct)
	if !ok || err != nil || v < 1 || v > 100 {
		return 0, fmt.Errorf("must be a number of Nodes, or a percentage of them from 1%% to 100%%, such as 25%%")
	}
	return max(total*v/100, 1), nil
}
