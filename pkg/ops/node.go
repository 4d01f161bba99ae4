package ops

import "time"

// Ops of the day-two commands: swdt exec and swdt logs.
var (
	// Exec runs one program on the node with its arguments as data and
	// streams its output back: the agent's stdout and stderr carry the
	// program's, and the result line follows last on stderr.
	Exec = registerStreaming[ExecRequest, ExecResponse]("exec")
	// ServiceLogs reads a service's recent log lines and the service
	// control manager's event-log entries about it.
	ServiceLogs = register[ServiceLogsRequest, ServiceLogsResponse]("service-logs")
)

// ExecRequest is a program to run and its arguments.
type ExecRequest struct {
	// Command is the program and its arguments. A bare program name is
	// looked up in the node's PATH, as a shell would.
	Command []string `json:"command"`
	// TimeoutMs bounds the program: it is stopped after that long.
	TimeoutMs int `json:"timeoutMs"`
}

// ExecResponse is how the program ended.
type ExecResponse struct {
	// ExitCode is the program's exit status.
	ExitCode int `json:"exitCode"`
	// TimedOut is true when the program was stopped at TimeoutMs.
	TimedOut bool `json:"timedOut,omitempty"`
}

// ServiceLogsRequest asks for a service's log.
type ServiceLogsRequest struct {
	// Service is the Windows service name.
	Service string `json:"service"`
	// Lines is how many of the log file's last lines to return when
	// Offset is negative.
	Lines int `json:"lines"`
	// Offset is where the previous read of the log file ended (a
	// follow-up read); negative for the last Lines lines.
	Offset int64 `json:"offset"`
	// Since selects event-log entries written at or after it.
	Since time.Time `json:"since"`
	// MaxEvents bounds how many event-log entries are returned.
	MaxEvents int `json:"maxEvents"`
}

// ServiceLogsResponse is a service's log as read now.
type ServiceLogsResponse struct {
	Service string `json:"service"`
	// Status is the service's state (Running, Stopped, ...).
	Status string `json:"status"`
	// LogFile is the file the service writes its log to, as its command
	// line (--log-file, --log_file) or nssm's AppStdout names it; empty
	// when neither does.
	LogFile string `json:"logFile,omitempty"`
	// Lines are the log file's lines read now.
	Lines []string `json:"lines"`
	// Offset is where this read of LogFile ended: the Offset of the next
	// read. It is 0 again when the file was truncated or replaced.
	Offset int64 `json:"offset"`
	// LogError says why LogFile could not be read.
	LogError string `json:"logError,omitempty"`
	// Events are the service control manager's entries about the
	// service, oldest first.
	Events []ServiceEvent `json:"events"`
	// EventsError says why the event log could not be read.
	EventsError string `json:"eventsError,omitempty"`
	// Now is the node's clock when it was read: the Since of the next
	// read.
	Now time.Time `json:"now"`
}

// ServiceEvent is one System event-log entry about a service.
type ServiceEvent struct {
	// Time is when the entry was written (UTC); zero when the node did
	// not say.
	Time time.Time `json:"time"`
	// Message is the entry's text.
	Message string `json:"message"`
}
