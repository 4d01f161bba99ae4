package wins

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/swdt/pkg/ops"
)

// Names of the verification checks.
const (
	CheckService    = "service"
	CheckPipes      = "pipes"
	CheckGetVersion = "get-version"
	CheckDeep       = "deep"
	// CheckVerify stands for every check when the verification itself
	// could not run (the op failed or timed out).
	CheckVerify = "verify"
)

// NoBridgeAdvice explains a wins that runs without its pipes.
const NoBridgeAdvice = `rancher/wins v0.16 and later removed the named-pipe bridge (\\.\pipe\rancher_wins and \\.\pipe\rancher_wins_proxy); use wins v0.15.x or earlier`

// Check is one verification check's outcome.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Checks turns what the node saw into the report's checks, in order:
// service, pipes, get-version and, when deep is set, deep.
func Checks(resp ops.WinsVerifyResponse, p Paths, deep bool) []Check {
	checks := []Check{serviceCheck(resp.Service, p), pipesCheck(resp), getVersionCheck(resp)}
	if deep {
		checks = append(checks, deepCheck(resp.Deep, p))
	}
	return checks
}

func serviceCheck(s ops.ServiceInfo, p Paths) Check {
	c := Check{Name: CheckService}
	var problems []string
	switch {
	case !s.Exists:
		c.Detail = "service " + ops.WinsService + " is not registered; run swdt wins to deploy it"
		return c
	case s.Status != "Running":
		problems = append(problems, "it is "+s.Status+", not Running")
	}
	if s.StartType != "Automatic" {
		problems = append(problems, "it starts "+s.StartType+", not Automatic")
	}
	if !strings.Contains(strings.ToLower(s.BinaryPath), strings.ToLower(p.Binary)) {
		problems = append(problems, fmt.Sprintf("it runs %s, not %s (run swdt wins uninstall, then swdt wins)", s.BinaryPath, p.Binary))
	}
	if len(problems) > 0 {
		c.Detail = "service " + ops.WinsService + ": " + strings.Join(problems, "; ")
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("service %s is Running (PID %d) and starts Automatic", ops.WinsService, s.PID)
	return c
}

func pipesCheck(resp ops.WinsVerifyResponse) Check {
	c := Check{Name: CheckPipes}
	var missing []string
	for _, name := range []string{ops.WinsPipe, ops.WinsProxyPipe} {
		if !resp.Pipes[name] {
			missing = append(missing, `\\.\pipe\`+name)
		}
	}
	switch {
	case len(missing) == 0:
		c.OK = true
		c.Detail = `\\.\pipe\` + ops.WinsPipe + ` and \\.\pipe\` + ops.WinsProxyPipe + " exist"
	case resp.Service.Status == "Running" && len(missing) == 2:
		c.Detail = "wins is running but created neither pipe: " + NoBridgeAdvice
	case resp.Service.Status != "Running":
		c.Detail = strings.Join(missing, " and ") + " missing: the pipes exist only while " + ops.WinsService + " runs"
	default:
		c.Detail = strings.Join(missing, " and ") + " missing while " + ops.WinsService + " runs"
	}
	return c
}

func getVersionCheck(resp ops.WinsVerifyResponse) Check {
	c := Check{Name: CheckGetVersion}
	if resp.GetVersionError != "" {
		c.Detail = resp.GetVersionError
		if resp.Service.Status == "Running" && !resp.Pipes[ops.WinsPipe] {
			c.Detail += "; " + NoBridgeAdvice
		}
		return c
	}
	var diffs []string
	for _, k := range ops.WinsVersionKeys {
		got, want := scalar(resp.GetVersion[k]), scalar(resp.Registry[k])
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s: wins says %q, the registry %q", k, got, want))
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		c.Detail = "get-version through the pipe does not match the host registry: " + strings.Join(diffs, "; ")
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("build %s.%s through the pipe matches the host registry", scalar(resp.Registry["CurrentBuildNumber"]), scalar(resp.Registry["UBR"]))
	return c
}

// scalar spells a JSON value the same way whether wins printed it as a
// number or a string (protobuf JSON prints 64-bit integers as strings).
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

func deepCheck(d *ops.WinsDeepResult, p Paths) Check {
	c := Check{Name: CheckDeep}
	switch {
	case d == nil:
		c.Detail = "the node did not run the deep check"
	case !d.OK:
		c.Detail = fmt.Sprintf("running %s through wins cli prc run failed: %s", p.Smoke, d.Error)
		if d.Output != "" {
			c.Detail += ": " + d.Output
		}
	default:
		c.OK = true
		c.Detail = fmt.Sprintf("%s ran on the host through the pipe and printed %q", SmokeName, d.Output)
	}
	if d != nil && len(d.Leftovers) > 0 {
		c.OK = false
		c.Detail += "; left behind: " + strings.Join(d.Leftovers, ", ")
	}
	return c
}
