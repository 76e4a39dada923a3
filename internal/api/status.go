package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"strings"

	"github.com/criticizer/criticizer/internal/job"
)

// StatusLinks mints and checks the links to GET /jobs/{id}. A job id is
// derived from public facts (source, changelist, version), so anyone can
// compute it: the route answers only with the link's token, an HMAC of the
// id under a deployment secret, which only the webhook's sender (from the
// 202 answer) and operators have. Without it the answer is the same 404 as
// for a job that does not exist, so not even a review's existence leaks.
type StatusLinks struct{ key []byte }

// NewStatusLinks derives the status key from a deployment secret (the
// unsubscribe signing key, which intake holds): a key of its own, by HMAC
// with a fixed label, so a status token says nothing about unsubscribe
// tokens and the other way round.
func NewStatusLinks(secret string) *StatusLinks {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("criticizer/job-status/v1"))
	return &StatusLinks{key: m.Sum(nil)}
}

var tokenEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// token is 128 bits of HMAC-SHA-256 over the job id, base32.
func (s *StatusLinks) token(id job.ID) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(id))
	return strings.ToLower(tokenEncoding.EncodeToString(m.Sum(nil)[:16]))
}

// Link is the job's status URL path, with its token; without links, the
// bare path (a deployment with no key has no job status route).
func (s *StatusLinks) Link(id job.ID) string {
	if s == nil {
		return "/jobs/" + string(id)
	}
	return "/jobs/" + string(id) + "?token=" + s.token(id)
}

// Valid reports, in constant time, whether token is the job's.
func (s *StatusLinks) Valid(id job.ID, token string) bool {
	return s != nil && hmac.Equal([]byte(s.token(id)), []byte(strings.ToLower(token)))
}
