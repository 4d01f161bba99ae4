package ops

// The ops of swdt join (DESIGN.md §4.3): what a node needs to become a
// worker of a cluster besides the kubelet binary and its service, which
// go through the hot-swap. The files live at fixed paths (those kubeadm
// uses on Windows); requests carry only their content.
var (
	// JoinInspect reads the node's host name, whether the kubelet files
	// exist and the kubelet's kubeconfig (to tell which cluster the node
	// belongs to).
	JoinInspect = register[JoinInspectRequest, JoinInspectResponse]("join-inspect")
	// JoinWrite writes the join files whose content differs, readable by
	// Administrators and SYSTEM only.
	JoinWrite = register[JoinWriteRequest, JoinWriteResponse]("join-write")
	// JoinReset stops and deletes the kubelet service and removes the
	// join files, the kubelet's certificates and the kubelet binary,
	// ending first the processes that still run those binaries (pod
	// sandboxes' shims).
	JoinReset = register[JoinResetRequest, JoinResetResponse]("join-reset")
)

// The files of a joined node.
const (
	// JoinCAFile is the cluster CA the kubelet trusts.
	JoinCAFile = `C:\etc\kubernetes\pki\ca.crt`
	// JoinBootstrapKubeconfig holds the bootstrap token (a secret).
	JoinBootstrapKubeconfig = `C:\etc\kubernetes\bootstrap-kubelet.conf`
	// JoinKubeconfig is written by the kubelet after TLS bootstrap.
	JoinKubeconfig = `C:\etc\kubernetes\kubelet.conf`
	// JoinKubeletConfig is the KubeletConfiguration file.
	JoinKubeletConfig = `C:\var\lib\kubelet\config.yaml`
	// JoinCertDir is where the kubelet keeps its client certificate.
	JoinCertDir = `C:\var\lib\kubelet\pki`
	// JoinKubeProxyKubeconfig is the kube-proxy service's kubeconfig
	// (a ServiceAccount token: a secret).
	JoinKubeProxyKubeconfig = `C:\etc\kubernetes\kube-proxy.conf`
	// JoinContainerdConfig is containerd's config.toml, where
	// Install-Containerd.ps1 puts it.
	JoinContainerdConfig = `C:\Program Files\containerd\config.toml`
	// JoinCNIBinDir is where containerd's CRI plugin looks for the CNI
	// plugins (its config's bin_dir).
	JoinCNIBinDir = `C:\opt\cni\bin`
)

// The log files of the join's services, where SIG Windows nodes keep
// them: the kubelet's and kube-proxy's through kube-log-runner's
// -log-file (they take no --log-file since 1.26), containerd's with its
// own --log-file. A join makes their folders as it makes its others.
const (
	JoinKubeletLog    = `C:\var\log\kubelet\kubelet.log`
	JoinKubeProxyLog  = `C:\var\log\kube-proxy\kube-proxy.log`
	JoinContainerdLog = `C:\var\log\containerd\containerd.log`
)

// JoinLogs are the log files a join may ask join-write for.
var JoinLogs = []string{JoinKubeletLog, JoinKubeProxyLog, JoinContainerdLog}

// JoinServices are the services a join may register, by name: what
// join-inspect reports as registered.
var JoinServices = []string{"containerd", "kubelet"}

// JoinFile names one join file by its role.
type JoinFile string

// The join files swdt writes.
const (
	JoinFileCA                  JoinFile = "ca"
	JoinFileBootstrapKubeconfig JoinFile = "bootstrap-kubeconfig"
	JoinFileKubeletConfig       JoinFile = "kubelet-config"
	JoinFileContainerdConfig    JoinFile = "containerd-config"
	JoinFileKubeProxyKubeconfig JoinFile = "kube-proxy-kubeconfig"
)

// JoinFilePaths maps each role to its path on the node.
var JoinFilePaths = map[JoinFile]string{
	JoinFileCA:                  JoinCAFile,
	JoinFileBootstrapKubeconfig: JoinBootstrapKubeconfig,
	JoinFileKubeletConfig:       JoinKubeletConfig,
	JoinFileContainerdConfig:    JoinContainerdConfig,
	JoinFileKubeProxyKubeconfig: JoinKubeProxyKubeconfig,
}

// JoinInspectRequest asks for the join state. Containerd and CNI say,
// as in JoinWriteRequest, which folders besides the kubelet's the join
// uses: only those are checked.
type JoinInspectRequest struct {
	// Containerd asks for containerd's configuration folder too.
	Containerd bool `json:"containerd,omitempty"`
	// CNI asks for JoinCNIBinDir too.
	CNI bool `json:"cni,omitempty"`
}

// JoinInspectResponse is the node's join state.
type JoinInspectResponse struct {
	// Hostname is the computer's host name.
	Hostname string `json:"hostname"`
	// Kubeconfig is the content of JoinKubeconfig ("" when missing),
	// at most 1 MiB.
	Kubeconfig string `json:"kubeconfig,omitempty" swdt:"secret"`
	// Files lists the join files that exist, by role.
	Files []JoinFile `json:"files,omitempty"`
	// Services lists the JoinServices that are registered.
	Services []string `json:"services,omitempty"`
	// Unsafe says, for each folder of the join (or a folder above one)
	// that an account other than Administrators, SYSTEM or the agent's
	// owns, why the join cannot use it; a join refuses such a node
	// before it changes anything.
	Unsafe []string `json:"unsafe,omitempty"`
	// Ignored lists files at the join's paths that another account owns:
	// they were not read (JoinKubeconfig then counts as missing), and a
	// join removes them.
	Ignored []string `json:"ignored,omitempty"`
}

// JoinWriteRequest carries the desired content of join files.
type JoinWriteRequest struct {
	Files map[JoinFile]string `json:"files" swdt:"secret"`
	// CNI asks for JoinCNIBinDir too, made safe like the folders of
	// the files, before the CNI plugins are put there.
	CNI bool `json:"cni,omitempty"`
	// Logs are the log files (of JoinLogs) the services will write:
	// their folders are made safe like the folders of the files.
	Logs []string `json:"logs,omitempty"`
}

// JoinWriteResponse lists the files that changed.
type JoinWriteResponse struct {
	Changed []JoinFile `json:"changed,omitempty"`
	// Notes says what was repaired: folders given back to
	// Administrators and SYSTEM, files of other owners removed unread.
	Notes []string `json:"notes,omitempty"`
}

// JoinResetRequest names the services a join registered, in the order
// they are removed (kube-proxy, the kubelet, then containerd).
type JoinResetRequest struct {
	Services []JoinService `json:"services"`
	// Files are binaries of the join that feed no service of their own
	// (containerd's shim, the CNI plugins), removed with swdt's backups
	// once the services are gone.
	Files []string `json:"files,omitempty"`
}

// JoinService is one service a join registered and its binary.
type JoinService struct {
	// Name is the service name.
	Name string `json:"name"`
	// Binary is the service's binary (removed with swdt's backups).
	Binary string `json:"binary"`
}

// JoinResetResponse reports what the reset removed.
type JoinResetResponse struct {
	// Deleted lists the services that existed and were deleted.
	Deleted []string `json:"deleted,omitempty"`
	// Removed lists the files removed.
	Removed []string `json:"removed,omitempty"`
	// Ended lists the processes that ran one of the files to remove
	// (containerd's shims serving pod sandboxes, which outlive
	// containerd) and were ended before the files were removed.
	Ended []JoinProcess `json:"ended,omitempty"`
	// InUse lists the files that could not be removed because a
	// process still runs them (one that could not be ended); the rest
	// was removed.
	InUse []JoinProcess `json:"inUse,omitempty"`
}

// JoinProcess is a process that runs one of a join's files.
type JoinProcess struct {
	// Path is the file the process runs.
	Path string `json:"path"`
	// Name is the process's image name; PID its process ID.
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// Error says why it could not be ended (InUse only).
	Error string `json:"error,omitempty"`
}
