package source

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

// LabelJudge says which of a change's labels its author cannot have set
// (R-REPO-7): only those may keep a version from review through the
// repository's skip_labels. A label the author can put on their own
// change is input, like the files they push, never a setting that lowers
// their review.
type LabelJudge interface {
	// LabelsBeyondAuthor returns the labels, of those given, that the
	// change's author cannot have set. An answer the source will not give
	// (credentials that may not ask) is no label, with Why saying so;
	// rate limits, 5xx and transport failures are errors, classified as
	// the diff's.
	LabelsBeyondAuthor(ctx context.Context, ref Ref, author string, labels []string) (LabelVerdict, error)
}

// LabelVerdict is a LabelJudge's answer.
type LabelVerdict struct {
	// Beyond are the labels the author cannot have set.
	Beyond []string
	// Why says, when some label is not Beyond, why not: a sentence for
	// the job's settings warnings, naming no label and no person.
	Why string
}

// WhyNoLabelJudge is LabelVerdict.Why for a source that cannot tell who
// may set its labels: none counts.
const WhyNoLabelJudge = "the source's labels can be set by the change's author, so skip_labels does not apply"

// What each source's labels are, for LabelVerdict.Why.
const (
	whyNoJudge         = WhyNoLabelJudge
	whyGerritHashtags  = "Gerrit hashtags can be set by the change's owner, so skip_labels does not apply to them"
	whyGitHubCanLabel  = "the pull request's author may set labels in the repository (triage access or more), so skip_labels does not apply"
	whyGitHubUnknown   = "GitHub did not say what the pull request's author may do in the repository (a token needs metadata: read, a classic token push access), so skip_labels did not apply"
	whyGitLabCanLabel  = "the merge request's author is a member of the project above Guest and may set labels, so skip_labels does not apply"
	whyGitLabByAuthor  = "a label in skip_labels was put on the merge request by its author, or GitLab keeps no record of who did, so it did not apply"
	whyGitLabUnknown   = "GitLab did not say who the merge request's author is in the project or who labelled it (the token needs read_api; at most 1,000 label events are read), so skip_labels did not apply"
	maxLabelEventPages = 10
)

// LabelsBeyondAuthor implements LabelJudge: a source whose fetcher does
// not judge its labels has none beyond its author.
func (r Router) LabelsBeyondAuthor(ctx context.Context, ref Ref, author string, labels []string) (LabelVerdict, error) {
	j, ok := r[ref.Source].(LabelJudge)
	if !ok {
		return LabelVerdict{Why: whyNoJudge}, nil
	}
	return j.LabelsBeyondAuthor(ctx, ref, author, labels)
}

// LabelsBeyondAuthor implements LabelJudge: none. A change's owner may
// set hashtags on their own change (Gerrit's "Edit Hashtags" is granted
// to the owner), so a hashtag never skips a review. It asks Gerrit
// nothing.
func (g *Gerrit) LabelsBeyondAuthor(context.Context, Ref, string, []string) (LabelVerdict, error) {
	return LabelVerdict{Why: whyGerritHashtags}, nil
}

// LabelsBeyondAuthor implements LabelJudge with GET
// /repos/{owner}/{repo}/collaborators/{author}/permission. Applying labels
// takes the triage role or more, and GitHub drops the labels of a user
// without it when they open a pull request, so when the author's
// permission is "none", or "read" with the role "read" (not triage, not a
// custom role, which may grant labelling), every label was set by
// someone else: all count. Any other role — the author could have
// labelled their own pull request, or had a workflow of their branch do
// it — none does. The token needs metadata: read (a classic token, push
// access); an answer of 401, 403 or 404 is none, with Why saying so.
func (g *GitHub) LabelsBeyondAuthor(ctx context.Context, ref Ref, author string, labels []string) (LabelVerdict, error) {
	const op = "github.GetCollaboratorPermission"
	repo, _, err := g.repoURL(ref)
	if err != nil {
		return LabelVerdict{}, err
	}
	if strings.TrimSpace(author) == "" {
		return LabelVerdict{Why: whyGitHubUnknown}, nil
	}
	var body struct {
		Permission string `json:"permission"`
		RoleName   string `json:"role_name"`
	}
	ok, err := getJSON(ctx, g.api(), op, repo+"/collaborators/"+url.PathEscape(author)+"/permission", "application/vnd.github+json", &body)
	if err != nil {
		return LabelVerdict{}, err
	}
	switch {
	case !ok:
		return LabelVerdict{Why: whyGitHubUnknown}, nil
	case body.Permission == "none", body.Permission == "read" && body.RoleName == "read":
		return LabelVerdict{Beyond: labels}, nil
	}
	return LabelVerdict{Why: whyGitHubCanLabel}, nil
}

// LabelsBeyondAuthor implements LabelJudge. On GitLab a member above
// Guest may label merge requests, their own included, and a non-member
// may set labels as they open one, so two things must hold: the author,
// as the merge request names them (GET /projects/:id/merge_requests/:iid,
// author.id), is no member above Guest of the target project (GET
// /projects/:id/members/all/:user_id: 404, or access_level at most 10);
// and the label's latest addition (GET
// .../merge_requests/:iid/resource_label_events, at most 10 pages of 100)
// was by another user. A label with no such record does not count.
func (g *GitLab) LabelsBeyondAuthor(ctx context.Context, ref Ref, _ string, labels []string) (LabelVerdict, error) {
	mr, err := g.mr(ref)
	if err != nil {
		return LabelVerdict{}, err
	}
	a := g.api()
	var m struct {
		Author *struct {
			ID int64 `json:"id"`
		} `json:"author"`
	}
	ok, err := getJSON(ctx, a, "gitlab.GetMergeRequest", mr, "application/json", &m)
	if err != nil {
		return LabelVerdict{}, err
	}
	if !ok || m.Author == nil || m.Author.ID == 0 {
		return LabelVerdict{Why: whyGitLabUnknown}, nil
	}
	author := m.Author.ID
	var member struct {
		AccessLevel int `json:"access_level"`
	}
	u := g.base() + "/projects/" + url.PathEscape(ref.Repo) + "/members/all/" + strconv.FormatInt(author, 10)
	resp, err := a.get(ctx, "gitlab.GetMemberInherited", u, "application/json")
	switch re, _ := errors.AsType[*retry.Error](err); {
	case re != nil && re.Class == retry.NotFound:
		// Not a member: no role to label with.
	case re != nil && re.Class == retry.AuthDenied:
		return LabelVerdict{Why: whyGitLabUnknown}, nil
	case err != nil:
		return LabelVerdict{}, err
	default:
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&member)
		resp.Body.Close()
		if err != nil {
			return LabelVerdict{}, malformed("gitlab.GetMemberInherited", err)
		}
		if member.AccessLevel > 10 {
			return LabelVerdict{Why: whyGitLabCanLabel}, nil
		}
	}
	added, ok, err := g.labelAdders(ctx, a, mr)
	if err != nil {
		return LabelVerdict{}, err
	}
	if !ok {
		return LabelVerdict{Why: whyGitLabUnknown}, nil
	}
	var v LabelVerdict
	for _, l := range labels {
		if by, ok := added[strings.ToLower(l)]; ok && by != author {
			v.Beyond = append(v.Beyond, l)
		} else {
			v.Why = whyGitLabByAuthor
		}
	}
	return v, nil
}

// labelAdders reads who last added each label to the merge request (by
// the label's name in lower case), from its resource label events: the
// latest "add" of each, by its time, the later id on a tie. ok is false
// when the token may not read them, or there are more than
// maxLabelEventPages pages of them.
func (g *GitLab) labelAdders(ctx context.Context, a api, mr string) (map[string]int64, bool, error) {
	const op = "gitlab.ListMergeRequestLabelEvents"
	type event struct {
		ID   int64 `json:"id"`
		User *struct {
			ID int64 `json:"id"`
		} `json:"user"`
		CreatedAt time.Time `json:"created_at"`
		Label     *struct {
			Name string `json:"name"`
		} `json:"label"`
		Action string `json:"action"`
	}
	latest := map[string]event{}
	page := "1"
	for n := 1; page != "" && n <= maxLabelEventPages; n++ {
		resp, err := a.get(ctx, op, mr+"/resource_label_events?per_page=100&page="+url.QueryEscape(page), "application/json")
		if re, ok := errors.AsType[*retry.Error](err); ok && re.Class == retry.AuthDenied {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		var es []event
		err = json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&es)
		resp.Body.Close()
		if err != nil {
			return nil, false, malformed(op, err)
		}
		for _, e := range es {
			if e.Action != "add" || e.Label == nil || e.User == nil {
				continue
			}
			k := strings.ToLower(e.Label.Name)
			if was, ok := latest[k]; ok && (was.CreatedAt.After(e.CreatedAt) || (was.CreatedAt.Equal(e.CreatedAt) && was.ID > e.ID)) {
				continue
			}
			latest[k] = e
		}
		page = strings.TrimSpace(resp.Header.Get("X-Next-Page"))
	}
	if page != "" {
		// More history than is read: a later addition, by the author,
		// may be on a page not read.
		return nil, false, nil
	}
	out := make(map[string]int64, len(latest))
	for k, e := range latest {
		out[k] = e.User.ID
	}
	return out, true, nil
}

// getJSON GETs a JSON document into v. 404, 401 and 403 are found false
// (a resource the credentials may not see); every other failure is an
// error, classified.
func getJSON(ctx context.Context, a api, op, u, accept string, v any) (bool, error) {
	resp, err := a.get(ctx, op, u, accept)
	if re, ok := errors.AsType[*retry.Error](err); ok && (re.Class == retry.NotFound || re.Class == retry.AuthDenied) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(v); err != nil {
		return false, malformed(op, err)
	}
	return true, nil
}
