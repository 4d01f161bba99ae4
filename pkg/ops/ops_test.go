package ops_test

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/ops"
)

// TestOpsRoundTrip sends every op's request and response, each field
// filled, through JSON and back: a field without a JSON name, a type
// that does not survive encoding or a request the agent would read
// differently from what swdt sent fails here, not on a node. The log
// form of each (Redacted) holds none of its secrets.
func TestOpsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{ops.APIServerProbe.Name, func(t *testing.T) { roundTrip(t, ops.APIServerProbe) }},
		{ops.AuthorizedKeysAdd.Name, func(t *testing.T) { roundTrip(t, ops.AuthorizedKeysAdd) }},
		{ops.ChocoInstall.Name, func(t *testing.T) { roundTrip(t, ops.ChocoInstall) }},
		{ops.ChocoPackages.Name, func(t *testing.T) { roundTrip(t, ops.ChocoPackages) }},
		{ops.Exec.Name, func(t *testing.T) { roundTrip(t, ops.Exec) }},
		{ops.FilesRemove.Name, func(t *testing.T) { roundTrip(t, ops.FilesRemove) }},
		{ops.HyperVCheckpointCreate.Name, func(t *testing.T) { roundTrip(t, ops.HyperVCheckpointCreate) }},
		{ops.HyperVCheckpointList.Name, func(t *testing.T) { roundTrip(t, ops.HyperVCheckpointList) }},
		{ops.HyperVCheckpointRestore.Name, func(t *testing.T) { roundTrip(t, ops.HyperVCheckpointRestore) }},
		{ops.HyperVVMAddresses.Name, func(t *testing.T) { roundTrip(t, ops.HyperVVMAddresses) }},
		{ops.HyperVVMStart.Name, func(t *testing.T) { roundTrip(t, ops.HyperVVMStart) }},
		{ops.HyperVVMStatus.Name, func(t *testing.T) { roundTrip(t, ops.HyperVVMStatus) }},
		{ops.HyperVVMStop.Name, func(t *testing.T) { roundTrip(t, ops.HyperVVMStop) }},
		{ops.JoinFeature.Name, func(t *testing.T) { roundTrip(t, ops.JoinFeature) }},
		{ops.JoinInspect.Name, func(t *testing.T) { roundTrip(t, ops.JoinInspect) }},
		{ops.JoinReset.Name, func(t *testing.T) { roundTrip(t, ops.JoinReset) }},
		{ops.JoinSetup.Name, func(t *testing.T) { roundTrip(t, ops.JoinSetup) }},
		{ops.JoinWrite.Name, func(t *testing.T) { roundTrip(t, ops.JoinWrite) }},
		{ops.NodeFacts.Name, func(t *testing.T) { roundTrip(t, ops.NodeFacts) }},
		{ops.NodeLockRenew.Name, func(t *testing.T) { roundTrip(t, ops.NodeLockRenew) }},
		{ops.NodeReboot.Name, func(t *testing.T) { roundTrip(t, ops.NodeReboot) }},
		{ops.NodeUnlock.Name, func(t *testing.T) { roundTrip(t, ops.NodeUnlock) }},
		{ops.ProvisionInspect.Name, func(t *testing.T) { roundTrip(t, ops.ProvisionInspect) }},
		{ops.RDPSet.Name, func(t *testing.T) { roundTrip(t, ops.RDPSet) }},
		{ops.ServiceConfigure.Name, func(t *testing.T) { roundTrip(t, ops.ServiceConfigure) }},
		{ops.ServiceLogs.Name, func(t *testing.T) { roundTrip(t, ops.ServiceLogs) }},
		{ops.ServiceRegister.Name, func(t *testing.T) { roundTrip(t, ops.ServiceRegister) }},
		{ops.ServiceRestart.Name, func(t *testing.T) { roundTrip(t, ops.ServiceRestart) }},
		{ops.ServiceStatus.Name, func(t *testing.T) { roundTrip(t, ops.ServiceStatus) }},
		{ops.ServiceSwap.Name, func(t *testing.T) { roundTrip(t, ops.ServiceSwap) }},
		{ops.SetupFacts.Name, func(t *testing.T) { roundTrip(t, ops.SetupFacts) }},
		{ops.SwapRecover.Name, func(t *testing.T) { roundTrip(t, ops.SwapRecover) }},
		{ops.SwapUndo.Name, func(t *testing.T) { roundTrip(t, ops.SwapUndo) }},
		{ops.WinsConfigWrite.Name, func(t *testing.T) { roundTrip(t, ops.WinsConfigWrite) }},
		{ops.WinsInspect.Name, func(t *testing.T) { roundTrip(t, ops.WinsInspect) }},
		{ops.WinsOrphansStop.Name, func(t *testing.T) { roundTrip(t, ops.WinsOrphansStop) }},
		{ops.WinsRegister.Name, func(t *testing.T) { roundTrip(t, ops.WinsRegister) }},
		{ops.WinsUninstall.Name, func(t *testing.T) { roundTrip(t, ops.WinsUninstall) }},
		{ops.WinsVerify.Name, func(t *testing.T) { roundTrip(t, ops.WinsVerify) }},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.name] = true
		t.Run(tt.name, tt.run)
	}
	for _, name := range ops.Names() {
		if !covered[name] {
			t.Errorf("op %s has no row here", name)
		}
	}
}

func roundTrip[Req, Resp any](t *testing.T, _ ops.Op[Req, Resp]) {
	t.Helper()
	var req Req
	var resp Resp
	for _, v := range []any{&req, &resp} {
		fill(t, reflect.ValueOf(v).Elem(), reflect.TypeOf(v).Elem().Name())
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encode %T: %v", v, err)
		}
		back := reflect.New(reflect.TypeOf(v).Elem())
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(back.Interface()); err != nil {
			t.Fatalf("decode %T from %s: %v", v, raw, err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), reflect.ValueOf(v).Elem().Interface()) {
			t.Errorf("%T changed in a round trip:\n sent %s\n got  %+v", v, raw, back.Elem().Interface())
		}
		secretsTagged(t, reflect.TypeOf(v).Elem(), map[reflect.Type]bool{})
		logged := string(ops.Redacted(v))
		for _, secret := range secrets(reflect.ValueOf(v).Elem(), false) {
			if strings.Contains(logged, secret) {
				t.Errorf("%T's secret %q is in its log form %s", v, secret, logged)
			}
		}
	}
}

// secrets lists the string values below the fields of v tagged
// `swdt:"secret"` (the keys of a secret map are not secret). A field
// whose name says it holds a secret must be so tagged.
func secrets(v reflect.Value, secret bool) []string {
	var out []string
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			out = append(out, secrets(v.Field(i), secret || f.Tag.Get("swdt") == ops.SecretTag)...)
		}
	case reflect.Pointer:
		if !v.IsNil() {
			out = secrets(v.Elem(), secret)
		}
	case reflect.Slice:
		for i := 0; i < v.Len() && v.Type().Elem().Kind() != reflect.Uint8; i++ {
			out = append(out, secrets(v.Index(i), secret)...)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			out = append(out, secrets(v.MapIndex(k), secret)...)
		}
	case reflect.String:
		if secret {
			out = append(out, v.String())
		}
	}
	return out
}

// secretsTagged fails for a field of ty (or of a type within it) whose
// name says it holds a secret but lacks the tag that keeps it out of logs.
func secretsTagged(t *testing.T, ty reflect.Type, seen map[reflect.Type]bool) {
	t.Helper()
	for ty.Kind() == reflect.Pointer || ty.Kind() == reflect.Slice || ty.Kind() == reflect.Map {
		ty = ty.Elem()
	}
	if ty.Kind() != reflect.Struct || seen[ty] {
		return
	}
	seen[ty] = true
	for i := 0; i < ty.NumField(); i++ {
		f := ty.Field(i)
		if secretName.MatchString(f.Name) && f.Type.Kind() == reflect.String && f.Tag.Get("swdt") != ops.SecretTag {
			t.Errorf("%s.%s looks like a secret but is not tagged swdt:%q", ty.Name(), f.Name, ops.SecretTag)
		}
		secretsTagged(t, f.Type, seen)
	}
}

var secretName = regexp.MustCompile(`(?i)token|password|secret|kubeconfig|privatekey`)

func TestRedacted(t *testing.T) {
	req := ops.JoinWriteRequest{Files: map[ops.JoinFile]string{ops.JoinFileBootstrapKubeconfig: "token: abcdef.0123456789abcdef"}, CNI: true}
	got := string(ops.Redacted(req))
	want := `{"cni":true,"files":{"bootstrap-kubeconfig":"<redacted>"}}`
	if got != want {
		t.Errorf("Redacted = %s, want %s", got, want)
	}
	if got := string(ops.Redacted(ops.ServiceStatusRequest{})); !strings.HasPrefix(got, "{") {
		t.Errorf("a request without secrets logs as %s", got)
	}
}

// fill sets every field of v to a value that is not its zero value, and
// fails when an exported field of a struct has no JSON name: the wire
// format is the contract, so every name on it is chosen, not derived.
func fill(t *testing.T, v reflect.Value, path string) {
	t.Helper()
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			if tag := f.Tag.Get("json"); tag == "" && !f.Anonymous {
				t.Errorf("%s.%s has no json tag", path, f.Name)
			} else if tag == "-" {
				continue
			}
			fill(t, v.Field(i), path+"."+f.Name)
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), path)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes([]byte("data"))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0), path+"[0]")
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k, path+"{key}")
		fill(t, e, path+"{value}")
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x-" + strings.ToLower(path[strings.LastIndexByte(path, '.')+1:]))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Interface:
		v.Set(reflect.ValueOf("x"))
	default:
		t.Errorf("%s: no sample for kind %s", path, v.Kind())
	}
}
