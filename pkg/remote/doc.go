// Package remote is swdt's SSH transport to a Windows node: dial and
// authenticate (ssh-agent, key file, password), check host keys against
// known_hosts, keep the connection alive, run commands, and move files
// over SFTP.
//
// It is the only package that speaks SSH. It never prints (warnings go to
// Config.Warn, detail to Config.Logger), never logs or returns secrets, and
// never writes a file straight to its final path: uploads land in a staged
// ".swdt-part" file that is renamed into place once complete. The one
// exception is UploadStream, for uploads the node checks before it uses
// them (swdt's encoded uploads, decoded and verified by the swap op).
//
// Every remote path argument is a Windows path (C:\k\kubelet.exe); SFTPPath
// is the one place that turns it into what Windows OpenSSH's SFTP server
// expects. Idempotent calls (Stat, MkdirAll, Rename, Remove, Download,
// Upload) reconnect once and retry when the connection drops; Exec never
// retries a command, since an op may have side effects.
package remote
