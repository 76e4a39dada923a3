package store

import "slices"

// SourceRef is where a job's changelist lives in its code review system,
// and who the webhook named as reviewers. Intake records it before the job
// exists (so a job of these sources always has one); the fetch stage reads
// it.
type SourceRef struct {
	Source  string
	Repo    string
	Number  int
	HeadSHA string
	// BaseSHA is the base commit the webhook named (GitHub), empty when
	// it named none: the fetch stage reviews HeadSHA against it and reads
	// the repository's settings there (R-SOURCE-5).
	BaseSHA string
	// Patchset is the Gerrit patch set number; 0 for the other sources.
	Patchset int
	// Reviewers are the usernames the webhook payload named.
	Reviewers []string
	// Labels are the change's labels as the payload named them
	// (webhook.Labels), for the repository's skip_labels (R-REPO-4).
	Labels []string
}

// UnionSorted is first, then the members of added not in it, sorted: how
// a version's fetched and added reviewers are listed.
func UnionSorted(first, added []string) []string {
	out := append([]string(nil), first...)
	seen := make(map[string]bool, len(out))
	for _, v := range out {
		seen[v] = true
	}
	rest := append([]string(nil), added...)
	slices.Sort(rest)
	for _, v := range rest {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
