package e2e

import (
	"net/http"
	"strings"

	"github.com/criticizer/criticizer/internal/devstack"
)

// githubCompare makes the stand-in answer GitHub's compare API for
// Codertocat/Hello-World, GET /repos/{owner}/{repo}/compare/{base}...{head},
// as GitHub's REST reference shows it (devstack.ServeCompare, which the
// chaos campaign's GitHub stand-in shares):
//
//   - with Accept: application/vnd.github.diff, the diff diffOf(base,
//     head) as text;
//   - as JSON (application/vnd.github+json), the comparison
//     (devstack.CompareCommits): its status ("ahead", "behind",
//     "identical", "diverged") comes from parents, each commit's parent
//     ("" for a root); a commit parents does not hold is GitHub's 404.
//     With parents nil the history is a branch only ever pushed to: head
//     is ahead.
func (f *fakeReviewAPI) githubCompare(diffOf func(base, head string) []byte, parents map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	const repo = "Codertocat/Hello-World"
	f.prefixes["GET /repos/"+repo+"/compare/"] = func(w http.ResponseWriter, r *http.Request) {
		devstack.ServeCompare(w, r, repo, strings.TrimPrefix(r.URL.Path, "/repos/"+repo+"/compare/"), parents, diffOf)
	}
}
