// Package ntfs is the simulated machine's C: drive: Windows paths
// (case-insensitive, resolved to their on-disk spelling below the state
// directory's fs/), files and folders with NTFS's locking rules (a running
// image cannot be written or deleted but can be renamed, a file open for
// writing cannot be started, handles held without FILE_SHARE_DELETE and a
// virus scanner refuse renames), owners and DACLs with inheritance and
// CREATOR OWNER and Windows Server's defaults, the access checks of a
// non-administrator, the marker bytes of service binaries, the digests of
// trusted agent builds, and the Win32 codes and wording of its errors.
//
// It is part of the machine model (package machine, whose lock it
// shares and whose state holds its owners and ACLs, see Host). It must
// never touch a file outside its root, never run a file, and never know
// services, sessions or programs: what it needs of the machine comes
// through Host.
package ntfs
