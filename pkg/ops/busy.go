package ops

import "time"

// BusyFileWait is the busy-file rule, the same on the node and over SFTP:
// Windows refuses to rename or delete a file while another process holds
// it open without sharing delete access (a sharing violation, or access
// denied), and antivirus, EDR and search indexers hold fresh and just-run
// executables for a moment. Such a rename or remove is tried again for
// about this long before it fails.
const BusyFileWait = 2 * time.Second
