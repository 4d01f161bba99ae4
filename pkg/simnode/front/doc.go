// Package front is simnode's sshd: the SSH server (key and password
// authentication with Windows OpenSSH's rules for
// administrators_authorized_keys), the SFTP subsystem with the paths
// Windows OpenSSH's sftp-server shows, exec of swdt-agent's command line
// (the agent's handlers run in-process over package simos, or under Wine
// with package wine), a small cmd.exe look-alike shell with PTY handling,
// direct-tcpip forwarding to the loopback, and the connections a reboot
// drops.
//
// It serves the machine only through machine.Machine's and Node's
// methods, never its state structs, and must never run a program it is
// sent other than the embedded swdt-agent (any other bytes at the
// agent's path are logged as untrusted and refused).
package front
