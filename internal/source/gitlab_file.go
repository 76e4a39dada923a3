package source

import (
	"context"
	"net/url"
	"strings"
)

// BaseFile implements FileFetcher with GitLab's repository files API: GET
// /projects/:id/repository/files/:file_path/raw?ref={base sha}, the path
// URL-encoded whole, the base the merge request version's
// (Changelist.BaseSHA). Without a base commit there is no version to
// read, and the file counts as absent: never the head.
func (g *GitLab) BaseFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	if err := checkRef("gitlab", ref); err != nil {
		return RepoFile{}, err
	}
	if strings.TrimSpace(ref.BaseSHA) == "" {
		return RepoFile{}, nil
	}
	u := g.base() + "/projects/" + url.PathEscape(ref.Repo) + "/repository/files/" + url.PathEscape(path) + "/raw?ref=" + url.QueryEscape(ref.BaseSHA)
	return g.api().getFile(ctx, "gitlab.GetRawFile", u, "text/plain", limit, nil)
}
