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
