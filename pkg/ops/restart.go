package ops

// Ops of swdt restart and swdt reboot.
var (
	// ServiceRestart stops services (their running dependents first) and
	// starts them again, with the swap's machinery and guarantees: the
	// node's lock is respected, a stop that hangs ends in a kill, every
	// service stopped is started again, and health checks run once the
	// services are up.
	ServiceRestart = register[ServiceRestartRequest, ServiceRestartResponse]("service-restart")
	// NodeReboot asks Windows to restart the machine and returns at once;
	// the SSH connection drops when the machine goes down.
	NodeReboot = register[NodeRebootRequest, NodeRebootResponse]("node-reboot")
	// ServiceStatus reads services' status, start type and process: what
	// swdt reboot --wait polls until they run.
	ServiceStatus = register[ServiceStatusRequest, ServiceStatusResponse]("service-status")
)

// ServiceRestartRequest names the services to restart.
type ServiceRestartRequest struct {
	// Services are restarted together: each is stopped (its running
	// dependents first) and all are started again, dependencies first. A
	// service that is Stopped is started.
	Services []string `json:"services"`
	// Checks are health checks by service name, run once it is Running.
	Checks map[string][]HealthCheckSpec `json:"checks,omitempty"`
	// StopTimeoutMs, StartTimeoutMs, SettleMs and HealthTimeoutMs are as
	// in ServiceSwapRequest.
	StopTimeoutMs   int `json:"stopTimeoutMs"`
	StartTimeoutMs  int `json:"startTimeoutMs"`
	SettleMs        int `json:"settleMs"`
	HealthTimeoutMs int `json:"healthTimeoutMs"`
}

// RestartedService is one service before and after a restart.
type RestartedService struct {
	Service string `json:"service"`
	// PIDBefore and PIDAfter are its process before and after (0 while
	// Stopped).
	PIDBefore int `json:"pidBefore"`
	PIDAfter  int `json:"pidAfter"`
	// Status is its status at the end.
	Status string `json:"status"`
}

// ServiceRestartResponse reports a restart: the swap op's account of
// what it stopped and started, and each named service's processes.
type ServiceRestartResponse struct {
	Services []RestartedService `json:"services"`
	// Killed, NotStarted, AlsoStopped and Downtime are as in
	// ServiceSwapResponse.
	Killed      []string          `json:"killed"`
	NotStarted  []ServiceProblem  `json:"notStarted"`
	AlsoStopped []string          `json:"alsoStopped"`
	Downtime    []ServiceDowntime `json:"downtime"`
}

// NodeRebootRequest asks for a restart of the machine.
type NodeRebootRequest struct {
	// DelaySeconds is how long Windows waits before it restarts (the /t
	// of shutdown.exe): time for the op's answer to reach swdt.
	DelaySeconds int `json:"delaySeconds"`
}

// NodeRebootResponse is the machine's state when the reboot was asked.
type NodeRebootResponse struct {
	// Hostname is the computer's name.
	Hostname string `json:"hostname"`
}

// ServiceStatusRequest names the services to read.
type ServiceStatusRequest struct {
	Services []string `json:"services"`
}

// ServiceStatusResponse has one entry per service, in request order.
type ServiceStatusResponse struct {
	Services []ServiceState `json:"services"`
}

// ServiceState is one service as it is now.
type ServiceState struct {
	Service string `json:"service"`
	// Exists is false when the node has no such service.
	Exists bool `json:"exists"`
	// Status is Running, Stopped, StartPending...
	Status string `json:"status,omitempty"`
	// StartType is Automatic, Manual or Disabled.
	StartType string `json:"startType,omitempty"`
	PID       int    `json:"pid,omitempty"`
}
