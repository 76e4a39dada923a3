package source

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

// Gerrit fetches changes from the Gerrit REST API, authenticated with HTTP
// basic auth (the /a/ prefix):
//
//   - the diff: GET /a/changes/{project}~{number}/revisions/{revision}/patch,
//     which returns the patch set as `git format-patch` output encoded in
//     base64; the mail header and commit message (which carry the author's
//     address) are dropped, keeping the diff from the first "diff --git";
//   - the reviewers: GET /a/changes/{project}~{number}/reviewers/, with
//     their e-mail addresses (the account needs to see them);
//   - the commit the repository's files are read at (R-REPO-6): the
//     destination branch's tip, never the patch set nor its parent, which
//     in a stack of changes is the author's own unmerged change. GET
//     /a/changes/{project}~{number} names the branch (ChangeInfo.branch),
//     GET /a/projects/{project}/branches/{branch} its tip
//     (BranchInfo.revision): Changelist.BaseSHA. A Ref whose BaseSHA is
//     set (pinned by an earlier attempt) keeps it, so a retry reads the
//     same bytes;
//   - whether the patch set's parent, which its diff is against, is
//     merged code (Changelist.BaseUnmerged): GET
//     …/revisions/{revision}/commit names it, GET
//     /a/projects/{project}/commits/{parent}/in says whether the
//     destination branch includes it (not asked when it is the tip).
//
// The revision is Ref.Patchset, else Ref.HeadSHA, else "current". JSON
// responses start with Gerrit's ")]}'" anti-XSSI line, which is stripped.
type Gerrit struct {
	// BaseURL is the server root, e.g. "https://review.example.com" (with
	// the context path, if Gerrit is not served at the root).
	BaseURL string
	// Username and Password are the account's HTTP credentials.
	Username, Password string
	// Client defaults to one with a 30 s timeout.
	Client *http.Client
	// MaxDiffBytes caps the diff; zero means DefaultMaxDiffBytes.
	MaxDiffBytes int
	// Now is the clock for Retry-After dates; nil means time.Now.
	Now func() time.Time
}

var _ Fetcher = (*Gerrit)(nil)

// gerritPreambleSlack is how much mail header and commit message is read
// beyond the diff limit before the diff starts.
const gerritPreambleSlack = 256 << 10

func (g *Gerrit) api() api {
	return newAPI(g.Client, g.Now, func(r *http.Request) {
		if g.Username != "" || g.Password != "" {
			r.SetBasicAuth(g.Username, g.Password)
		}
	})
}

func (g *Gerrit) change(ref Ref) (string, error) {
	if err := checkRef("gerrit", ref); err != nil {
		return "", err
	}
	if g.BaseURL == "" {
		return "", retry.Permanent(retry.RuntimeBug, fmt.Errorf("source: gerrit base URL is not configured"))
	}
	return g.root() + "/a/changes/" + url.PathEscape(ref.Repo) + "~" + strconv.Itoa(ref.Number), nil
}

// root is the server's URL without a trailing slash.
func (g *Gerrit) root() string { return strings.TrimRight(g.BaseURL, "/") }

// Fetch implements Fetcher.
func (g *Gerrit) Fetch(ctx context.Context, ref Ref) (Changelist, error) {
	change, err := g.change(ref)
	if err != nil {
		return Changelist{}, err
	}
	rev := gerritRevision(ref)
	a := g.api()
	var cl Changelist
	if cl.Diff, cl.Truncated, err = g.patch(ctx, a, change+"/revisions/"+rev+"/patch"); err != nil {
		return Changelist{}, err
	}
	if cl.Reviewers, err = g.reviewers(ctx, a, change+"/reviewers/"); err != nil {
		return Changelist{}, err
	}
	var branch string
	if branch, err = g.destinationBranch(ctx, a, change); err != nil {
		return Changelist{}, err
	}
	cl.BaseSHA = ref.BaseSHA
	if cl.BaseSHA == "" && branch != "" {
		if cl.BaseSHA, err = g.branchTip(ctx, a, ref, branch); err != nil {
			return Changelist{}, err
		}
	}
	if cl.BaseUnmerged, err = g.parentUnmerged(ctx, a, change+"/revisions/"+rev, ref, branch, cl.BaseSHA); err != nil {
		return Changelist{}, err
	}
	return cl, nil
}

// destinationBranch is the branch the change is for
// (ChangeInfo.branch); "" when Gerrit does not know the change.
func (g *Gerrit) destinationBranch(ctx context.Context, a api, change string) (string, error) {
	var info struct {
		Branch string `json:"branch"`
	}
	found, err := getGerritJSON(ctx, a, "gerrit.GetChange", change, &info)
	if err != nil || !found {
		return "", err
	}
	if strings.TrimSpace(info.Branch) == "" {
		return "", malformed("gerrit.GetChange", errors.New("the change names no destination branch"))
	}
	return info.Branch, nil
}

// branchTip is the commit the change's destination branch points at
// now: code already merged, where its settings and the files' first
// lines are read (R-REPO-6). A branch Gerrit does not know (404) has
// none: "" reads no file, so the version is reviewed with defaults and
// nothing is taken for generated.
func (g *Gerrit) branchTip(ctx context.Context, a api, ref Ref, branch string) (string, error) {
	var info struct {
		Revision string `json:"revision"`
	}
	u := g.root() + "/a/projects/" + url.PathEscape(ref.Repo) + "/branches/" + url.PathEscape(branch)
	found, err := getGerritJSON(ctx, a, "gerrit.GetBranch", u, &info)
	if err != nil || !found {
		return "", err
	}
	if !isCommitName(info.Revision) {
		return "", malformed("gerrit.GetBranch", errors.New("the branch names no commit"))
	}
	return strings.ToLower(info.Revision), nil
}

// parentUnmerged reports whether the commit the patch set's diff is
// against — its first parent (GET …/revisions/{rev}/commit,
// CommitInfo.parents) — is not known to be merged code: in a stack of
// changes it is the author's own open change, and what the diff shows
// of it (a file's old name, its removed and context lines) proves
// nothing about the branch (R-CRITIC-7). It is merged when it is the
// tip the files are read at, or when the destination branch includes it
// (GET /a/projects/{project}/commits/{parent}/in, IncludedInInfo); a
// root commit has no old side. Anything unknown is unmerged.
func (g *Gerrit) parentUnmerged(ctx context.Context, a api, revision string, ref Ref, branch, tip string) (bool, error) {
	var commit struct {
		Parents []struct {
			Commit string `json:"commit"`
		} `json:"parents"`
	}
	found, err := getGerritJSON(ctx, a, "gerrit.GetCommit", revision+"/commit", &commit)
	switch {
	case err != nil:
		return false, err
	case !found || branch == "":
		return true, nil
	case len(commit.Parents) == 0:
		return false, nil
	}
	parent := strings.ToLower(commit.Parents[0].Commit)
	if !isCommitName(parent) {
		return false, malformed("gerrit.GetCommit", errors.New("the patch set's parent is no commit"))
	}
	if parent == tip {
		return false, nil
	}
	var in struct {
		Branches []string `json:"branches"`
	}
	u := g.root() + "/a/projects/" + url.PathEscape(ref.Repo) + "/commits/" + parent + "/in"
	if found, err = getGerritJSON(ctx, a, "gerrit.GetIncludedIn", u, &in); err != nil || !found {
		return true, err
	}
	for _, b := range in.Branches {
		if strings.TrimPrefix(b, "refs/heads/") == branch {
			return false, nil
		}
	}
	return true, nil
}

// getGerritJSON GETs one of Gerrit's JSON entities (its ")]}'" line
// stripped) into v; 404 is found false.
func getGerritJSON(ctx context.Context, a api, op, u string, v any) (bool, error) {
	resp, err := a.get(ctx, op, u, "application/json")
	if re, ok := errors.AsType[*retry.Error](err); ok && re.Class == retry.NotFound {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, retry.WithOp(err, op)
	}
	if err := json.Unmarshal(stripXSSI(b), v); err != nil {
		return false, malformed(op, err)
	}
	return true, nil
}

// isCommitName reports whether s is a full SHA-1 or SHA-256 object name.
func isCommitName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

// Reviewers implements Fetcher. Gerrit keeps a reviewer who voted among
// the change's reviewers, and reviewer-deleted takes one off.
func (g *Gerrit) Reviewers(ctx context.Context, ref Ref) (Reviewers, error) {
	change, err := g.change(ref)
	if err != nil {
		return Reviewers{}, err
	}
	return g.reviewers(ctx, g.api(), change+"/reviewers/")
}

func (g *Gerrit) patch(ctx context.Context, a api, u string) (string, bool, error) {
	const op = "gerrit.GetPatch"
	limit := maxBytes(g.MaxDiffBytes)
	resp, err := a.get(ctx, op, u, "text/plain")
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	// The decoder skips the line breaks Gerrit may put in the base64.
	raw, more, err := readLimited(base64.NewDecoder(base64.StdEncoding, resp.Body), limit+gerritPreambleSlack)
	if err != nil {
		if _, ok := errors.AsType[base64.CorruptInputError](err); ok {
			return "", false, malformed(op, err)
		}
		return "", false, retry.WithOp(err, op)
	}
	d := string(raw)
	if i := firstLineStart(d, "diff --git "); i >= 0 {
		d = d[i:]
	} else if !more {
		d = "" // no file changed (a merge with no conflicts, an empty commit)
	}
	d = stripFormatPatchSignature(d, more)
	if more {
		// The read stopped mid-stream: never keep its last, partial line.
		if len(d) < 2 {
			d = ""
		} else {
			limit = min(limit, len(d)-1)
		}
	}
	out, cut := TruncateDiff(d, limit)
	return out, cut || more, nil
}

// firstLineStart returns the offset of the first line of s starting
// with prefix, or -1.
func firstLineStart(s, prefix string) int {
	if strings.HasPrefix(s, prefix) {
		return 0
	}
	if i := strings.Index(s, "\n"+prefix); i >= 0 {
		return i + 1
	}
	return -1
}

// stripFormatPatchSignature drops the "-- \n<git version>\n" trailer that
// format-patch appends. Only a trailer that looks like one is dropped: a
// removed line "- " inside a hunk also reads "-- ".
func stripFormatPatchSignature(d string, more bool) string {
	i := strings.LastIndex(d, "\n-- \n")
	if more || i < 0 {
		return d
	}
	rest := d[i+len("\n-- \n"):]
	if len(rest) > 64 {
		return d
	}
	for line := range strings.SplitSeq(rest, "\n") {
		if line != "" && (line[0] < '0' || line[0] > '9') {
			return d
		}
	}
	return d[:i+1]
}

func (g *Gerrit) reviewers(ctx context.Context, a api, u string) (Reviewers, error) {
	const op = "gerrit.ListReviewers"
	resp, err := a.get(ctx, op, u, "application/json")
	if err != nil {
		return Reviewers{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return Reviewers{}, retry.WithOp(err, op)
	}
	var body []struct {
		AccountID int    `json:"_account_id"`
		Name      string `json:"name"`
		Email     string `json:"email"`
		Username  string `json:"username"`
	}
	if err := json.Unmarshal(stripXSSI(b), &body); err != nil {
		return Reviewers{}, malformed(op, err)
	}
	out := []Reviewer{}
	seen := map[string]bool{}
	for _, r := range body {
		if r.Username == "" && r.Email == "" {
			continue // an account we cannot address (e.g. a group placeholder)
		}
		k := strings.ToLower(r.Email) + "\x00" + strings.ToLower(r.Username)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, Reviewer{Username: r.Username, Email: strings.TrimSpace(r.Email)})
	}
	return Reviewers{Requested: out, Reviewed: []Reviewer{}}, nil
}

// stripXSSI removes the ")]}'" line Gerrit puts before every JSON response
// so that it cannot be included as a script.
func stripXSSI(b []byte) []byte {
	b = bytes.TrimLeft(b, "\ufeff \t\r\n")
	if rest, ok := bytes.CutPrefix(b, []byte(")]}'")); ok {
		return rest
	}
	return b
}

// gerritRevision names the revision a Ref reads, as a path segment: the
// patch set, else the head commit, else the current one.
func gerritRevision(ref Ref) string {
	switch {
	case ref.Patchset > 0:
		return strconv.Itoa(ref.Patchset)
	case ref.HeadSHA != "":
		return url.PathEscape(ref.HeadSHA)
	}
	return "current"
}
