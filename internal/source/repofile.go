package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

// FileRequestTimeout bounds the request for a repository file (the
// repository's .criticizer.yaml, a file's first lines at the base): the
// fetch stage makes it beside the diff's, and reserves its time too
// (R-STAGE-9).
const FileRequestTimeout = 10 * time.Second

// RepoFile is a file of the repository at the base of the version under
// review.
type RepoFile struct {
	// Content is the file's bytes, at most the limit asked for plus one:
	// a longer Content says the file is over the limit.
	Content []byte
	// Found: the file exists at the base.
	Found bool
	// Denied: the credentials may not read the repository's files (401
	// or 403; a GitHub token needs contents: read). Treated as absent, so
	// that a token good for the diff keeps reviews going.
	Denied bool
}

// FileFetcher reads one file of a changelist's repository at code
// already merged, never at the version's head nor anything the change's
// author controls (R-REPO-6): what the change wrote is what is reviewed,
// not what decides how. All three read at Ref.BaseSHA (the event's base,
// or the one Fetch returned in Changelist.BaseSHA, pinned by the fetch
// stage): GitHub's contents API in the upstream repository (never a
// fork's), GitLab's repository files API in the target project (never
// the source project of a fork), Gerrit's file content of a commit, the
// destination branch's tip (never the patch set's parent, which in a
// stack of changes is unmerged). A missing file is not an error (Found
// false); rate limits, 5xx and transport failures are, classified as the
// diff's are.
type FileFetcher interface {
	BaseFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error)
}

// BaseFile implements FileFetcher; a source whose fetcher reads no files
// has none.
func (r Router) BaseFile(ctx context.Context, ref Ref, path string, limit int) (RepoFile, error) {
	f, ok := r[ref.Source].(FileFetcher)
	if !ok {
		return RepoFile{}, nil
	}
	return f.BaseFile(ctx, ref, path, limit)
}

// getFile GETs a file's content and reads at most limit+1 bytes of it,
// through decode (nil: as served). 404 is a missing file, 401 and 403 a
// denied one.
func (a api) getFile(ctx context.Context, op, url, accept string, limit int, decode func(io.Reader) io.Reader) (RepoFile, error) {
	ctx, cancel := context.WithTimeout(ctx, FileRequestTimeout)
	defer cancel()
	resp, err := a.get(ctx, op, url, accept)
	if re, ok := errors.AsType[*retry.Error](err); ok {
		switch {
		case re.Class == retry.NotFound:
			return RepoFile{}, nil
		case re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden:
			if re.Class == retry.AuthDenied {
				return RepoFile{Denied: true}, nil
			}
		}
	}
	if err != nil {
		return RepoFile{}, err
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if decode != nil {
		r = decode(r)
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return RepoFile{}, retry.WithOp(err, op)
		}
		return RepoFile{}, malformed(op, fmt.Errorf("reading the file: %w", err))
	}
	return RepoFile{Content: b, Found: true}, nil
}
