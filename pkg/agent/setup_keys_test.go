package agent_test

import (
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/swdt/pkg/agent"
	"sigs.k8s.io/swdt/pkg/ops"
	"sigs.k8s.io/swdt/pkg/simnode"
	"sigs.k8s.io/swdt/pkg/winos"
)

const (
	sshKeyA = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA a@laptop"
	sshKeyB = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB b@laptop"
	// sshKeyC's comment is not ASCII: Windows PowerShell 5.1 reads a file
	// without BOM as ANSI and would never match it again.
	sshKeyC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIC 山田@ノートPC-renée"
)

func TestAuthorizedKeysAdd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		existing  []byte // nil means no file
		keys      []string
		wantAdded int
		wantKeys  []string
		wantFile  string
	}{
		{name: "new file", keys: []string{sshKeyA, sshKeyB}, wantAdded: 2, wantKeys: []string{sshKeyA, sshKeyB},
			wantFile: sshKeyA + "\r\n" + sshKeyB + "\r\n"},
		{name: "new empty file", wantKeys: []string{}},
		{name: "keeps existing lines and comments", existing: []byte("# team keys\r\n" + sshKeyA + "\r\n"), keys: []string{sshKeyA, sshKeyB},
			wantAdded: 1, wantKeys: []string{sshKeyA, sshKeyB}, wantFile: "# team keys\r\n" + sshKeyA + "\r\n" + sshKeyB + "\r\n"},
		{name: "no final newline", existing: []byte(sshKeyA), keys: []string{sshKeyB}, wantAdded: 1, wantKeys: []string{sshKeyA, sshKeyB},
			wantFile: sshKeyA + "\r\n" + sshKeyB + "\r\n"},
		{name: "nothing missing", existing: []byte(sshKeyA + "\n"), keys: []string{"  " + sshKeyA + "  "}, wantKeys: []string{sshKeyA},
			wantFile: sshKeyA + "\n"},
		// Keys are base64: one differing only in case is another key.
		{name: "case matters", existing: []byte(sshKeyA + "\r\n"), keys: []string{strings.ToUpper(sshKeyA)}, wantAdded: 1,
			wantKeys: []string{sshKeyA, strings.ToUpper(sshKeyA)}, wantFile: sshKeyA + "\r\n" + strings.ToUpper(sshKeyA) + "\r\n"},
		{name: "same key under another comment", existing: []byte(sshKeyA + "\r\n"), keys: []string{strings.TrimSuffix(sshKeyA, "a@laptop") + "a@desktop"},
			wantKeys: []string{sshKeyA}, wantFile: sshKeyA + "\r\n"},
		{name: "non-ASCII comment present", existing: []byte(sshKeyC + "\r\n"), keys: []string{sshKeyC}, wantKeys: []string{sshKeyC},
			wantFile: sshKeyC + "\r\n"},
		{name: "utf-8 BOM is dropped", existing: append([]byte{0xEF, 0xBB, 0xBF}, sshKeyA+"\r\n"...), keys: []string{sshKeyA, sshKeyB}, wantAdded: 1,
			wantKeys: []string{sshKeyA, sshKeyB}, wantFile: sshKeyA + "\r\n" + sshKeyB + "\r\n"},
		{name: "utf-16le with BOM is rewritten", existing: setupUTF16("\ufeff"+sshKeyC+"\r\n# old\r\n", false), keys: []string{sshKeyC, sshKeyA},
			wantAdded: 1, wantKeys: []string{sshKeyC, sshKeyA}, wantFile: sshKeyC + "\r\n# old\r\n" + sshKeyA + "\r\n"},
		{name: "utf-16le without BOM is rewritten", existing: setupUTF16(sshKeyA+"\r\n", false), keys: []string{sshKeyA},
			wantKeys: []string{sshKeyA}, wantFile: sshKeyA + "\r\n"},
		{name: "utf-16be is rewritten", existing: setupUTF16("\ufeff"+sshKeyA, true), keys: []string{sshKeyB}, wantAdded: 1,
			wantKeys: []string{sshKeyA, sshKeyB}, wantFile: sshKeyA + "\r\n" + sshKeyB + "\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if tc.existing != nil {
				if err := n.WriteFile(simnode.PathAdminAuthorizedKeys, tc.existing); err != nil {
					t.Fatal(err)
				}
				// A hand-made file that grants Users read access.
				if err := n.SetACL(simnode.PathAdminAuthorizedKeys, &simnode.ACL{Entries: []simnode.ACE{{Identity: `BUILTIN\Users`, Rights: "RX"}}}); err != nil {
					t.Fatal(err)
				}
			}
			st, err := agent.Call(setupCtx(t), n.OS(), ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			if st.Added != tc.wantAdded || !st.Exists || !st.ACLOK || st.Encoding != ops.EncodingUTF8 || !reflect.DeepEqual(st.Keys, tc.wantKeys) {
				t.Errorf("state = %+v, want %d added, keys %q", st, tc.wantAdded, tc.wantKeys)
			}
			raw, err := n.ReadFile(simnode.PathAdminAuthorizedKeys)
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != tc.wantFile {
				t.Errorf("file = %q, want %q", raw, tc.wantFile)
			}
			acl, _ := n.ACL(simnode.PathAdminAuthorizedKeys)
			if !simnode.AdminOnlyACL(acl) {
				t.Errorf("ACL = %+v, want Administrators and SYSTEM only", acl)
			}
			if got := n.SSHDAdminKeys(); !reflect.DeepEqual(got, setupValidKeys(tc.wantKeys)) {
				t.Errorf("sshd would accept %q, want %q", got, tc.wantKeys)
			}
		})
	}
}

// TestAuthorizedKeysAddIsIdempotent runs the op twice with a key whose
// comment is not ASCII, on a file sshd ignored (UTF-16): the first run
// makes sshd read it, the second finds nothing to do.
func TestAuthorizedKeysAddIsIdempotent(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	n := ts.Node()
	if err := n.WriteFile(simnode.PathAdminAuthorizedKeys, setupUTF16("\ufeff"+sshKeyA+"\r\n", false)); err != nil {
		t.Fatal(err)
	}
	if got := n.SSHDAdminKeys(); got != nil {
		t.Fatalf("sshd accepts %q from a UTF-16 file", got)
	}
	for run, wantAdded := range []int{1, 0, 0} {
		st, err := agent.Call(setupCtx(t), n.OS(), ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: []string{sshKeyA, sshKeyC}})
		if err != nil {
			t.Fatal(err)
		}
		if st.Added != wantAdded || !reflect.DeepEqual(st.Keys, []string{sshKeyA, sshKeyC}) {
			t.Errorf("run %d: state = %+v, want %d added", run+1, st, wantAdded)
		}
		facts, err := agent.Call(setupCtx(t), n.OS(), ops.SetupFacts, ops.SetupFactsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if ak := facts.AuthorizedKeys; ak.Encoding != ops.EncodingUTF8 || !ak.ACLOK || !reflect.DeepEqual(ak.Keys, []string{sshKeyA, sshKeyC}) {
			t.Errorf("run %d: facts = %+v", run+1, ak)
		}
	}
	raw, _ := n.ReadFile(simnode.PathAdminAuthorizedKeys)
	if want := sshKeyA + "\r\n" + sshKeyC + "\r\n"; string(raw) != want {
		t.Errorf("file = %q, want %q", raw, want)
	}
	if got := n.SSHDAdminKeys(); !reflect.DeepEqual(got, []string{sshKeyA, sshKeyC}) {
		t.Errorf("sshd would accept %q", got)
	}
}

// TestAuthorizedKeysAddRepairsTheACL: an ACL that grants more than
// Administrators and SYSTEM, or inherits, is replaced even when no key is
// missing; one that is right is left alone.
func TestAuthorizedKeysAddRepairsTheACL(t *testing.T) {
	t.Parallel()
	admins := simnode.ACE{Identity: `BUILTIN\Administrators`, Rights: "F"}
	system := simnode.ACE{Identity: `NT AUTHORITY\SYSTEM`, Rights: "F"}
	tests := []struct {
		name string
		acl  *simnode.ACL
	}{
		{name: "inherited", acl: nil},
		{name: "protected but Users can read", acl: &simnode.ACL{InheritanceDisabled: true, Entries: []simnode.ACE{admins, system, {Identity: `BUILTIN\Users`, Rights: "R"}}}},
		{name: "explicit but inheriting", acl: &simnode.ACL{Entries: []simnode.ACE{admins, system}}},
		{name: "right already", acl: &simnode.ACL{InheritanceDisabled: true, Entries: []simnode.ACE{system, admins}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t)
			n := ts.Node()
			if err := n.WriteFile(simnode.PathAdminAuthorizedKeys, []byte(sshKeyA+"\r\n")); err != nil {
				t.Fatal(err)
			}
			if err := n.SetACL(simnode.PathAdminAuthorizedKeys, tc.acl); err != nil {
				t.Fatal(err)
			}
			st, err := agent.Call(setupCtx(t), n.OS(), ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: []string{sshKeyA}})
			if err != nil {
				t.Fatal(err)
			}
			acl, _ := n.ACL(simnode.PathAdminAuthorizedKeys)
			if st.Added != 0 || !st.ACLOK || !simnode.AdminOnlyACL(acl) {
				t.Errorf("state = %+v, ACL = %+v", st, acl)
			}
		})
	}
}

// TestAuthorizedKeysAddTakesOwnership: a file a non-administrator
// created (C:\ProgramData lets Users create files, and the creator owns
// them) is refused by sshd whatever its ACL, since its owner may rewrite
// the ACL; the op gives it to Administrators and reads the owner back.
func TestAuthorizedKeysAddTakesOwnership(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		owner string // "" for the administrator who creates it
		keys  []string
	}{
		{name: "created by mallory, key missing", owner: "mallory", keys: []string{sshKeyA, sshKeyB}},
		{name: "created by mallory, nothing missing", owner: "mallory", keys: []string{sshKeyA}},
		{name: "owned by SYSTEM", owner: simnode.AccountSystem, keys: []string{sshKeyA}},
		{name: "owned by Administrators", keys: []string{sshKeyA}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
			n := ts.Node()
			writer := n
			if tc.owner == "mallory" {
				var err error
				if writer, err = ts.NodeAs("mallory"); err != nil {
					t.Fatal(err)
				}
			}
			if err := writer.WriteFile(simnode.PathAdminAuthorizedKeys, []byte(sshKeyA+"\r\n")); err != nil {
				t.Fatal(err)
			}
			if tc.owner == simnode.AccountSystem {
				if err := n.SetOwner(simnode.PathAdminAuthorizedKeys, simnode.AccountSystem); err != nil {
					t.Fatal(err)
				}
			}
			facts, err := agent.Call(setupCtx(t), n.OS(), ops.SetupFacts, ops.SetupFactsRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if wantOK := tc.owner != "mallory"; facts.AuthorizedKeys.OwnerOK != wantOK || facts.AuthorizedKeys.Owner == "" {
				t.Errorf("facts: ownerOk = %v, owner %q; want ownerOk %v", facts.AuthorizedKeys.OwnerOK, facts.AuthorizedKeys.Owner, wantOK)
			}
			st, err := agent.Call(setupCtx(t), n.OS(), ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: tc.keys})
			if err != nil {
				t.Fatal(err)
			}
			if !st.OwnerOK || !st.ACLOK || (st.Owner != winos.SIDAdministrators && st.Owner != winos.SIDSystem) {
				t.Errorf("state = %+v, want the file owned by Administrators or SYSTEM", st)
			}
			if owner, _ := n.Owner(simnode.PathAdminAuthorizedKeys); tc.owner == "mallory" && owner != simnode.AccountAdministrators {
				t.Errorf("owner = %q, want Administrators", owner)
			}
			if got := n.SSHDAdminKeys(); !reflect.DeepEqual(got, tc.keys) {
				t.Errorf("sshd would accept %q, want %q", got, tc.keys)
			}
		})
	}
}

// A file an ordinary user created first, holding her own key, is moved
// aside unread, and the new file holds only the node file's keys: sshd
// was refusing hers, and taking it over would make it an Administrator
// key.
func TestAuthorizedKeysAddNeverAdoptsAPlantedFile(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "mallory"}))
	n := ts.Node()
	mallory, err := ts.NodeAs("mallory")
	if err != nil {
		t.Fatal(err)
	}
	if err := mallory.WriteFile(simnode.PathAdminAuthorizedKeys, []byte(sshKeyB+"\r\n")); err != nil {
		t.Fatal(err)
	}
	st, err := agent.Call(setupCtx(t), n.OS(), ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: []string{sshKeyA}})
	if err != nil {
		t.Fatal(err)
	}
	aside := ops.UntrustedPath(simnode.PathAdminAuthorizedKeys)
	if st.SetAside != aside || !reflect.DeepEqual(st.Keys, []string{sshKeyA}) || st.Added != 1 || !st.OwnerOK || !st.ACLOK {
		t.Errorf("state = %+v, want mallory's file set aside and only the node file's key", st)
	}
	if got := n.SSHDAdminKeys(); !reflect.DeepEqual(got, []string{sshKeyA}) {
		t.Errorf("sshd would accept %q, want only the node file's key", got)
	}
	if raw, err := n.ReadFile(aside); err != nil || string(raw) != sshKeyB+"\r\n" {
		t.Errorf("the planted file set aside: %q, %v", raw, err)
	}
}

func TestAuthorizedKeysAddRefusesNonAdmin(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t, simnode.WithAccount(simnode.Account{Name: "developer"}))
	_, err := agent.Call(setupCtx(t), setupOSAs(t, ts, "developer"), ops.AuthorizedKeysAdd, ops.AuthorizedKeysAddRequest{Keys: []string{"ssh-ed25519 AAAA x"}})
	setupWantFailure(t, err, "access-denied", "denied", `WIN-SIMNODE01\developer`)
	if ts.Node().Exists(simnode.PathAdminAuthorizedKeys) {
		t.Error("a non-administrator wrote administrators_authorized_keys")
	}
}

// TestAuthorizedKeysAddRefusesMultiLineKeys: a "key" holding a line break
// would smuggle a second line (with options of its own) into the file.
func TestAuthorizedKeysAddRefusesMultiLineKeys(t *testing.T) {
	t.Parallel()
	ts := simnode.StartTest(t)
	_, err := agent.Call(setupCtx(t), ts.Node().OS(), ops.AuthorizedKeysAdd,
		ops.AuthorizedKeysAddRequest{Keys: []string{sshKeyA, sshKeyB + "\ncommand=\"calc.exe\" " + sshKeyC}})
	setupWantFailure(t, err, "bad-request", "one line")
	if ts.Node().Exists(simnode.PathAdminAuthorizedKeys) {
		t.Error("the file was written")
	}
}

// setupValidKeys are the lines sshd takes for keys: not comments, and of
// a key type it knows (types are lower-case).
func setupValidKeys(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "ssh-") {
			out = append(out, l)
		}
	}
	return out
}
