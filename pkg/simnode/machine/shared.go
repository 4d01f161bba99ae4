package machine

import (
	"strings"
	"time"
)

// Shared-process services. Most Windows services run in an svchost.exe
// shared with others of its group (SERVICE_WIN32_SHARE_PROCESS): a
// service's stop leaves the process running for the others, and killing
// the process ends every service in it. The seed has two such services
// in the netsvcs group: iphlpsvc and, once the Containers feature is
// installed (features.go), hns (the Host Network Service, which container
// networking needs).

// PathSvchost is the shared service host.
const PathSvchost = `C:\Windows\System32\svchost.exe`

// seedSharedServices adds the shared services of a fresh VM, Running in
// one process; hns only with the Containers feature (containers).
func seedSharedServices(s *State, now time.Time, containers bool) {
	services := []*Service{{Name: "iphlpsvc", DisplayName: "IP Helper"}}
	if containers {
		services = append([]*Service{{Name: "hns", DisplayName: "Host Network Service"}}, services...)
	}
	for _, svc := range services {
		svc.BinaryPath, svc.Args, svc.ShareGroup = PathSvchost, []string{"-k", "netsvcs", "-p"}, "netsvcs"
		svc.StartType, svc.Status, svc.StartCount, svc.ErrorControl = StartAutomatic, StatusRunning, 1, ErrorControlNormal
		s.Services[strings.ToLower(svc.Name)] = svc
		s.spawn(svc, now)
	}
}

// sharedHost is the process of a running service that svc shares its
// process with, 0 when there is none.
func (s *State) sharedHost(svc *Service) int {
	if svc.ShareGroup == "" {
		return 0
	}
	for _, k := range sortedKeys(s.Services) {
		o := s.Services[k]
		if o != svc && o.ShareGroup == svc.ShareGroup && o.PID != 0 && s.Processes[o.PID] != nil {
			return o.PID
		}
	}
	return 0
}

// hostsOthers reports whether svc's process also runs other services.
func (s *State) hostsOthers(svc *Service) bool {
	for _, o := range s.servicesIn(svc.PID) {
		if o != svc {
			return true
		}
	}
	return false
}

// servicesIn lists the services whose process is pid.
func (s *State) servicesIn(pid int) []*Service {
	var out []*Service
	for _, k := range sortedKeys(s.Services) {
		if o := s.Services[k]; pid != 0 && o.PID == pid {
			out = append(out, o)
		}
	}
	return out
}
