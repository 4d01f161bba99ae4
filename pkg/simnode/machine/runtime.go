package machine

import (
	"fmt"
	"strings"
)

// A kubelet reaches its container runtime as soon as its process runs:
// kubelet.exe checks the CRI endpoint that --container-runtime-endpoint
// names and exits when nothing answers there ("validate service
// connection"). The service control manager starts the kubelet once
// containerd reports Running, but containerd opens its pipe only after
// it has loaded its plugins (State.PipeDelays): at boot a kubelet can
// start before the pipe exists and exit, and then stays down unless its
// service has restart actions. Modelled for a named-pipe endpoint that a
// service of the machine owns (State.ServicePipes); an endpoint no
// service of the model owns is a runtime simnode does not model, taken
// as answering.

// runtimeEndpointFlag is the kubelet flag naming its CRI endpoint.
const runtimeEndpointFlag = "--container-runtime-endpoint="

// checkRuntimeLocked makes svc, which just reported Running, exit after
// Delays.CrashAfter when its arguments name a runtime pipe that a
// service of the machine owns and that pipe does not exist yet.
func (m *Machine) checkRuntimeLocked(svc *Service) {
	pipe := runtimePipe(svc.Args)
	if pipe == "" {
		return
	}
	for _, k := range sortedKeys(m.st.ServicePipes) {
		owner := m.st.Services[k]
		for _, p := range m.st.ServicePipes[k] {
			if !strings.EqualFold(p, pipe) || owner == nil {
				continue
			}
			if pipesUp(m.st, owner, svc.RunningSince) {
				return
			}
			m.log.Info(fmt.Sprintf("%s (pid %d): validate service connection: the container runtime's pipe \\\\.\\pipe\\%s does not exist: exiting", svc.Name, svc.PID, pipe))
			svc.CrashAt = svc.RunningSince.Add(m.delays.CrashAfter)
			return
		}
	}
}

// runtimePipe is the pipe name of an npipe:////./pipe/NAME runtime
// endpoint among args, or "".
func runtimePipe(args []string) string {
	for _, a := range args {
		v, ok := strings.CutPrefix(a, runtimeEndpointFlag)
		if !ok {
			continue
		}
		v = strings.ReplaceAll(strings.TrimPrefix(v, "npipe:"), `\`, "/")
		if name, ok := strings.CutPrefix(strings.TrimLeft(v, "/"), "./pipe/"); ok {
			return name
		}
	}
	return ""
}
