package mail

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strconv"
	"strings"
)

// The review sources a changelist URL can come from (Data.Source). They
// decide how a finding's file and line are linked.
const (
	SourceGitHub  = "github"
	SourceGitLab  = "gitlab"
	SourceGerrit  = "gerrit"
	SourceGeneric = "generic"
)

// LineURL links to a file, and a line of it when line > 0, in the review
// tool's diff view of the changelist at changeURL. Anchors are derived from
// the path alone, because the email is rendered from the critique, which
// has no diff positions:
//
//   - github: the pull request's files view, "<url>/files#diff-<hex
//     sha256(path)>R<line>" (R: the line in the new file). GitHub names a
//     file's diff "diff-" + the SHA-256 of its path; "R<n>" is new-side line n.
//   - gitlab: the merge request's diffs view, "<url>/diffs#<hex sha1(path)>",
//     the file's anchor (GitLab's file_hash is the SHA-1 of the path). The
//     file, not the line: a GitLab line anchor "<sha1>_<old>_<new>" needs
//     the old-side line number too, which for an added line is the old
//     file's position at that hunk and is not in the critique. A wrong line
//     code scrolls nowhere; the file anchor always lands.
//   - gerrit: "<url>/<patch set>/<path>#<line>", the file in the reviewed
//     patch set (Data.ReviewVersion is the patch set number for Gerrit)
//     with PolyGerrit's line hash (the line number on the revision side).
//   - anything else (generic, unknown, or a URL that is not http(s)): the
//     changelist URL unchanged, since there is no diff view to point into.
func LineURL(source, changeURL string, version int, path string, line int) string {
	u, err := url.Parse(changeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || path == "" {
		return changeURL
	}
	base := strings.TrimRight(changeURL, "/")
	if i := strings.IndexAny(base, "?#"); i >= 0 {
		// Anchors cannot follow a query or fragment in the changelist URL.
		return changeURL
	}
	switch source {
	case SourceGitHub:
		sum := sha256.Sum256([]byte(path))
		s := base + "/files#diff-" + hex.EncodeToString(sum[:])
		if line > 0 {
			s += "R" + strconv.Itoa(line)
		}
		return s
	case SourceGitLab:
		sum := sha1.Sum([]byte(path))
		return base + "/diffs#" + hex.EncodeToString(sum[:])
	case SourceGerrit:
		if version <= 0 {
			return changeURL
		}
		s := base + "/" + strconv.Itoa(version) + "/" + escapePath(path)
		if line > 0 {
			s += "#" + strconv.Itoa(line)
		}
		return s
	default:
		return changeURL
	}
}

// escapePath escapes each segment of a repository path for a URL path,
// keeping the slashes between them.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
