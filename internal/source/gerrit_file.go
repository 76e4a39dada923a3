package source

import (
	"context"
	"encoding/base64"
	"io"
	"net/url"
)

// File implements FileFetcher with Gerrit's file content: GET
// /a/changes/{project}~{number}/revisions/{revision}/files/{path}/content,
// base64 text, of the revision Fetch reads (the patch set, else the head
// commit, else the current one).
func (g *Gerrit) File(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	change, err := g.change(ref)
	if err != nil {
		return RepoFile{}, err
	}
	rev := gerritRevision(ref)
	u := change + "/revisions/" + rev + "/files/" + url.PathEscape(path) + "/content"
	return g.api().getFile(ctx, "gerrit.GetContent", u, "text/plain", limit, func(r io.Reader) io.Reader {
		return base64.NewDecoder(base64.StdEncoding, r)
	})
}
