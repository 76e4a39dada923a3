package source

import (
	"context"
	"net/url"
	"strings"
)

// File implements FileFetcher with GitLab's repository files API: GET
// /projects/:id/repository/files/:file_path/raw?ref={head sha}, the path
// URL-encoded whole. Without a head commit there is no version to read,
// and the file counts as absent.
func (g *GitLab) File(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	if err := checkRef("gitlab", ref); err != nil {
		return RepoFile{}, err
	}
	if strings.TrimSpace(ref.HeadSHA) == "" {
		return RepoFile{}, nil
	}
	u := g.base() + "/projects/" + url.PathEscape(ref.Repo) + "/repository/files/" + url.PathEscape(path) + "/raw?ref=" + url.QueryEscape(ref.HeadSHA)
	return g.api().getFile(ctx, "gitlab.GetRawFile", u, "text/plain", limit, nil)
}
