package target

import (
	"reflect"
	"testing"

	"sigs.k8s.io/swdt/apis/config/v1alpha1"
	"sigs.k8s.io/swdt/pkg/ops"
)

// sample returns a non-zero value of type t, distinct per field index.
func sample(t *testing.T, typ reflect.Type, i int) reflect.Value {
	v := reflect.New(typ).Elem()
	switch typ.Kind() {
	case reflect.String:
		v.SetString("value-" + string(rune('a'+i)))
	case reflect.Int32, reflect.Int, reflect.Int64:
		v.SetInt(int64(100 + i))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		v = reflect.MakeSlice(typ, 2, 2)
		v.Index(0).Set(sample(t, typ.Elem(), i))
		v.Index(1).Set(sample(t, typ.Elem(), i+1))
	default:
		t.Fatalf("no sample for a field of kind %s: teach this test", typ.Kind())
	}
	return v
}

// TestHealthChecksMapsEveryField sets each field of the Node API's health
// check alone and expects the agent's spec to carry it in the field of
// the same name, and the agent's spec to have no field the API lacks: a
// field added to one and not mapped fails here.
func TestHealthChecksMapsEveryField(t *testing.T) {
	api := reflect.TypeFor[v1alpha1.HealthCheck]()
	wire := reflect.TypeFor[ops.HealthCheckSpec]()
	if api.NumField() != wire.NumField() {
		t.Fatalf("v1alpha1.HealthCheck has %d fields, ops.HealthCheckSpec %d: map the new one in HealthChecks", api.NumField(), wire.NumField())
	}
	for i := range api.NumField() {
		f := api.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var in v1alpha1.HealthCheck
			want := sample(t, f.Type, i)
			reflect.ValueOf(&in).Elem().Field(i).Set(want)
			out := HealthChecks([]v1alpha1.HealthCheck{in})
			if len(out) != 1 {
				t.Fatalf("HealthChecks returned %d checks", len(out))
			}
			got := reflect.ValueOf(out[0]).FieldByName(f.Name)
			if !got.IsValid() {
				t.Fatalf("ops.HealthCheckSpec has no field %s", f.Name)
			}
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("%s = %v, want %v: HealthChecks does not map it", f.Name, got, want)
			}
		})
	}
}

// TestProvisionerRegisterMapsEveryField does the same for a provisioner's
// register section and the agent's service-register request.
func TestProvisionerRegisterMapsEveryField(t *testing.T) {
	api := reflect.TypeFor[v1alpha1.ServiceRegistration]()
	for i := range api.NumField() {
		f := api.Field(i)
		t.Run(f.Name, func(t *testing.T) {
			var reg v1alpha1.ServiceRegistration
			want := sample(t, f.Type, i)
			reflect.ValueOf(&reg).Elem().Field(i).Set(want)
			b := Provisioner(v1alpha1.ProvisionerSpec{Name: "csi-proxy", Destination: `C:\k\csi-proxy.exe`, Register: &reg})
			if b.Register == nil {
				t.Fatal("Register was dropped")
			}
			if b.Register.Name != "csi-proxy" || b.Register.Program != `C:\k\csi-proxy.exe` {
				t.Errorf("request names service %q program %q", b.Register.Name, b.Register.Program)
			}
			got := reflect.ValueOf(*b.Register).FieldByName(f.Name)
			if f.Name == "Replace" {
				// What the run may do to the service, not what it asks
				// the node to register.
				got = reflect.ValueOf(b.RegisterReplace)
			}
			if !got.IsValid() {
				t.Fatalf("ops.ServiceRegisterRequest has no field %s", f.Name)
			}
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("%s = %v, want %v: Provisioner does not map it", f.Name, got, want)
			}
		})
	}
}

func TestProvisioner(t *testing.T) {
	tests := []struct {
		name string
		spec v1alpha1.ProvisionerSpec
		want Binary
	}{
		{
			name: "service of the same name",
			spec: v1alpha1.ProvisionerSpec{Name: "kubelet", SourceURL: "/b/kubelet.exe", Destination: `C:\k\kubelet.exe`, Overwrite: true, SHA256: "AB"},
			want: Binary{Name: "kubelet", Service: "kubelet", Destination: `C:\k\kubelet.exe`, SourceURL: "/b/kubelet.exe", SHA256: "AB", Overwrite: true, HealthChecks: []ops.HealthCheckSpec{}},
		},
		{
			name: "a helper of another service",
			spec: v1alpha1.ProvisionerSpec{Name: "containerd-shim", Service: "containerd", SourceURL: "/b/shim.exe", Destination: `C:\k\shim.exe`},
			want: Binary{Name: "containerd-shim", Service: "containerd", Helper: true, Destination: `C:\k\shim.exe`, SourceURL: "/b/shim.exe", HealthChecks: []ops.HealthCheckSpec{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Provisioner(tt.spec); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Provisioner = %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if k1, k2 := (Binary{SourceURL: "u", SHA256: "AB"}).SourceKey(), (Binary{SourceURL: "u", SHA256: "ab"}).SourceKey(); k1 != k2 {
		t.Errorf("SourceKey differs by digest case: %q, %q", k1, k2)
	}
}

func TestWins(t *testing.T) {
	b := Wins(&v1alpha1.WinsSpec{SourceURL: "/b/wins.exe", Destination: `D:\wins\wins.exe`})
	if b.Name != WinsName || b.Service != ops.WinsService || b.Destination != `D:\wins\wins.exe` || len(b.HealthChecks) != 3 {
		t.Errorf("Wins = %+v", b)
	}
	if got := b.HealthChecks[2].Command[0]; got != `D:\wins\wins.exe` {
		t.Errorf("get-version runs %s, want the destination", got)
	}
	if got := WinsDestination(nil); got != v1alpha1.DefaultWinsDestination {
		t.Errorf("WinsDestination(nil) = %s", got)
	}
}
