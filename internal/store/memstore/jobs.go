package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/store"
)

// Jobs is the in-memory jobs table: jobs, idempotency records, changelist
// heads and source references, with store.Jobs's conditions.
type Jobs struct {
	mu    sync.Mutex
	jobs  map[job.ID]job.Job
	idem  map[string]idemRecord
	heads map[string]head
	refs  map[job.ID]store.SourceRef
	// beside holds what the DynamoDB driver keeps on the job item
	// beside job.Job's fields.
	beside map[job.ID]*beside
	// diffs are the versions recorded per changelist and diff content
	// (SameDiff), made on first use.
	diffs map[string][]int
	// commits are the changelists' head commits and version counters
	// (heads.go), made on first use.
	commits map[string]*headState
	now     store.Clock
}

// beside is what a job item holds that job.Job does not: the reviewers
// without an address, fetched and added, and when each stage first
// failed.
type beside struct {
	noEmail, addedNoEmail []string
	firstFailure          map[job.Stage]time.Time
}

// besideOf returns id's record, made on first use; s.mu is held.
func (s *Jobs) besideOf(id job.ID) *beside {
	b := s.beside[id]
	if b == nil {
		b = &beside{firstFailure: map[job.Stage]time.Time{}}
		s.beside[id] = b
	}
	return b
}

type head struct {
	version int
	jobID   job.ID
	// title is the thread title (store.Jobs.ThreadTitle); "" for none.
	title string
}

type idemRecord struct {
	jobID          job.ID
	requestSHA256  string
	responseStatus int
	responseBody   []byte
}

// Jobs keeps the one jobs contract dynamo.Jobs keeps (storetest.Jobs).
var _ store.Jobs = (*Jobs)(nil)

// NewJobs returns an empty jobs table with clock now (time.Now if nil).
func NewJobs(now store.Clock) *Jobs {
	if now == nil {
		now = time.Now
	}
	return &Jobs{jobs: map[job.ID]job.Job{}, idem: map[string]idemRecord{}, heads: map[string]head{},
		refs: map[job.ID]store.SourceRef{}, beside: map[job.ID]*beside{}, now: now}
}

// Create implements store.Jobs: the job, its idempotency record and
// the changelist head in one step, each with its condition; the first
// failing one decides, in store.Jobs's order.
func (s *Jobs) Create(_ context.Context, req store.CreateRequest) (store.CreateResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := req.Job
	idemKey := j.Source + "#" + req.IdempotencyKeySHA
	headKey := job.ChangelistKey(j.Source, j.ChangelistID)
	old, jobExists := s.jobs[j.ID]
	rec, idemExists := s.idem[idemKey]
	h, headExists := s.heads[headKey]
	switch {
	case idemExists && rec.requestSHA256 != req.RequestSHA256:
		return store.CreateResult{Outcome: store.KeyReused}, nil
	case idemExists:
		res := store.CreateResult{Outcome: store.Replayed, ResponseStatus: rec.responseStatus, ResponseBody: append([]byte(nil), rec.responseBody...)}
		if jobExists {
			res.Job = old
		}
		return res, nil
	case jobExists:
		return store.CreateResult{Outcome: store.VersionExists, Job: old}, nil
	case headExists && h.version >= j.ReviewVersion && !req.Placed:
		return store.CreateResult{Outcome: store.Stale, CurrentVersion: h.version}, nil
	}
	s.jobs[j.ID] = j
	s.idem[idemKey] = idemRecord{jobID: j.ID, requestSHA256: req.RequestSHA256, responseStatus: req.ResponseStatus,
		responseBody: append([]byte(nil), req.ResponseBody...)}
	if headExists && h.version >= j.ReviewVersion {
		// A placed version below the head: created, the head left as it
		// is (store.CreateRequest.Placed).
		return store.CreateResult{Outcome: store.Created, Job: j, ResponseStatus: req.ResponseStatus, ResponseBody: req.ResponseBody}, nil
	}
	title := h.title
	if title == "" {
		title = j.Title // if_not_exists, as store.Jobs.Create
	}
	s.heads[headKey] = head{j.ReviewVersion, j.ID, title}
	return store.CreateResult{Outcome: store.Created, Job: j, ResponseStatus: req.ResponseStatus, ResponseBody: req.ResponseBody}, nil
}

// Get implements store.Jobs.
func (s *Jobs) Get(_ context.Context, id job.ID) (job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok {
		return job.Job{}, fmt.Errorf("job %s: %w", id, store.ErrNotFound)
	}
	return j, nil
}

// LatestVersion implements store.Jobs: the changelist's head, or
// ErrNotFound.
func (s *Jobs) LatestVersion(_ context.Context, source, changelistID string) (int, job.ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.heads[job.ChangelistKey(source, changelistID)]
	if !ok {
		return 0, "", fmt.Errorf("changelist %s: %w", changelistID, store.ErrNotFound)
	}
	return h.version, h.jobID, nil
}

// ThreadTitle implements store.Jobs.
func (s *Jobs) ThreadTitle(_ context.Context, source, changelistID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heads[job.ChangelistKey(source, changelistID)].title, nil
}

// KeepThreadTitle implements store.Jobs.
func (s *Jobs) KeepThreadTitle(_ context.Context, source, changelistID, title string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := job.ChangelistKey(source, changelistID)
	h, ok := s.heads[k]
	if !ok {
		return "", fmt.Errorf("changelist %s: %w", changelistID, store.ErrNotFound)
	}
	if h.title == "" {
		h.title = title
		s.heads[k] = h
	}
	return h.title, nil
}

// ForgetThreadTitle makes a changelist's head one written before heads
// kept their thread title (tests of what notify does then).
func (s *Jobs) ForgetThreadTitle(source, changelistID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := job.ChangelistKey(source, changelistID)
	if h, ok := s.heads[k]; ok {
		h.title = ""
		s.heads[k] = h
	}
}

// Expire drops a job and its idempotency records, as DynamoDB's TTL does
// when the retention has passed; the changelist head stays.
func (s *Jobs) Expire(id job.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.jobs, id)
	delete(s.refs, id)
	delete(s.beside, id)
	for k, r := range s.idem {
		if r.jobID == id {
			delete(s.idem, k)
		}
	}
}

// Put stores a job as is (tests set up a job in a given state).
func (s *Jobs) Put(j job.Job) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[j.ID] = j
}

// PutSourceRef implements store.Jobs: the first write is kept.
func (s *Jobs) PutSourceRef(_ context.Context, id job.ID, ref store.SourceRef) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.refs[id]; !ok {
		s.refs[id] = ref
	}
	return nil
}

func (s *Jobs) update(id job.ID, cond func(job.Job) bool, f func(*job.Job)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok || !cond(j) {
		return fmt.Errorf("update job %s: %w", id, store.ErrConflict)
	}
	f(&j)
	j.UpdatedAt = s.now().UTC()
	s.jobs[id] = j
	return nil
}

// write applies a stage's results to j (store.JobWrite.Apply), and keeps
// the reviewers without an address beside it; s.mu is held.
func (s *Jobs) write(j *job.Job, w store.JobWrite) {
	w.Apply(j)
	if r := w.Reviewers; r != nil {
		s.besideOf(j.ID).noEmail = append([]string(nil), r.NoEmail...)
	}
}

// Advance implements store.Jobs: the next stage, on condition that the
// job is still at from.
func (s *Jobs) Advance(_ context.Context, id job.ID, from job.Stage, attempt int, status job.Status, w store.JobWrite) error {
	return s.update(id, func(j job.Job) bool { return j.Stage == from }, func(j *job.Job) {
		j.Stage, j.Status, j.LastError = from.Next(), status, nil
		if j.Attempts == nil {
			j.Attempts = job.Attempts{}
		}
		j.Attempts[from] = attempt
		s.write(j, w)
	})
}

// SetStatus implements store.Jobs: on condition that the job is at at
// and not in a final status (succeeded, dead-lettered), as
// dynamo.Jobs.SetStatus.
func (s *Jobs) SetStatus(_ context.Context, id job.ID, at job.Stage, status job.Status, w store.JobWrite) error {
	return s.update(id, func(j job.Job) bool { return j.Stage == at && !j.Status.Final() }, func(j *job.Job) {
		j.Status = status
		s.write(j, w)
	})
}

// NoEmailReviewers implements store.Jobs: the fetched identities, then
// the added ones.
func (s *Jobs) NoEmailReviewers(_ context.Context, id job.ID) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.beside[id]
	if b == nil {
		return store.UnionSorted(nil, nil), nil
	}
	return store.UnionSorted(b.noEmail, b.addedNoEmail), nil
}

// AddReviewers implements store.Jobs.AddReviewers: set unions, added_rev+1.
func (s *Jobs) AddReviewers(_ context.Context, id job.ID, addrs, identities []string) (job.Job, error) {
	var out job.Job
	err := s.update(id, func(job.Job) bool { return true }, func(j *job.Job) {
		j.AddedRecipients = union(j.AddedRecipients, addrs)
		b := s.besideOf(id)
		b.addedNoEmail = union(b.addedNoEmail, identities)
		j.AddedRev++
		out = *j
	})
	if err != nil {
		return job.Job{}, fmt.Errorf("add reviewers to job %s: %w", id, err)
	}
	out.UpdatedAt = s.jobs[id].UpdatedAt
	return out, nil
}

// union is a set union, as DynamoDB's ADD of a string set.
func union(a, b []string) []string {
	out := append([]string(nil), a...)
	for _, v := range b {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// FinishNotify implements store.Jobs.FinishNotify.
func (s *Jobs) FinishNotify(_ context.Context, id job.ID, attempt int, status job.Status, addedRev int) error {
	return s.update(id, func(j job.Job) bool { return j.Stage == job.StageNotify && j.AddedRev == addedRev }, func(j *job.Job) {
		j.Status, j.AddedSeen = status, addedRev
		if status == job.StatusSucceeded {
			j.Stage, j.LastError = job.StageDone, nil
			if j.Attempts == nil {
				j.Attempts = job.Attempts{}
			}
			j.Attempts[job.StageNotify] = attempt
		}
	})
}

// RecordFailure implements stage.FailureRecorder with
// dynamo.Jobs.RecordFailure's conditions: never on a job that does
// not exist or succeeded; a retryable failure leaves a job held
// needs_intervention as it is. It returns when the stage first failed,
// kept across attempts.
func (s *Jobs) RecordFailure(_ context.Context, id job.ID, f job.Failure, status job.Status) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[id]
	if !ok || j.Status == job.StatusSucceeded {
		return time.Time{}, fmt.Errorf("record failure on job %s: %w", id, store.ErrConflict)
	}
	if status != job.StatusRetryableFailed || j.Status != job.StatusNeedsIntervention {
		j.Status = status
	}
	if j.Attempts == nil {
		j.Attempts = job.Attempts{}
	}
	j.Attempts[f.Stage] = f.Attempt
	j.LastError, j.UpdatedAt = &f, s.now().UTC()
	if status == job.StatusDeadLettered {
		j.DeadLetter = &f
	}
	b := s.besideOf(id)
	first, ok := b.firstFailure[f.Stage]
	if !ok {
		first = f.At.UTC()
		b.firstFailure[f.Stage] = first
	}
	s.jobs[id] = j
	return first, nil
}

// Restart implements dynamo.Jobs.Restart: a dead-lettered job only,
// back at stage at (from fetch, without its critique, and without its
// fetched diff when refetch).
func (s *Jobs) Restart(_ context.Context, id job.ID, at job.Stage, refetch bool) error {
	return s.update(id, func(j job.Job) bool { return j.Status == job.StatusDeadLettered }, func(j *job.Job) {
		j.Stage, j.Status = at, job.StatusInProgress
		if at == job.StageFetch {
			j.Critique = nil
			if refetch {
				j.DiffRef, j.DiffSHA256 = "", ""
			}
		}
	})
}

// GetSourceRef implements pipeline.Jobs.
func (s *Jobs) GetSourceRef(_ context.Context, id job.ID) (store.SourceRef, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.refs[id]
	if !ok {
		return store.SourceRef{}, fmt.Errorf("source reference of %s: %w", id, store.ErrNotFound)
	}
	return ref, nil
}

// Reopen implements store.Jobs.
func (s *Jobs) Reopen(_ context.Context, id job.ID) error {
	return s.update(id, func(j job.Job) bool {
		finished := (j.Status == job.StatusSucceeded || j.Status == job.StatusNeedsIntervention) && j.Stage == job.StageDone
		return finished || (j.Stage == job.StageNotify && j.Status != job.StatusDeadLettered)
	}, func(j *job.Job) {
		j.Stage, j.Status = job.StageNotify, job.StatusInProgress
		j.AddedRev++
	})
}

// Intervene implements store.Jobs.
func (s *Jobs) Intervene(_ context.Context, id job.ID) error {
	return s.update(id, func(j job.Job) bool {
		return (j.Stage == job.StageNotify || j.Stage == job.StageDone) && j.Status != job.StatusDeadLettered
	}, func(j *job.Job) { j.Status, j.AddedRev = job.StatusNeedsIntervention, j.AddedRev+1 })
}

// StuckJobs implements store.Jobs.
func (s *Jobs) StuckJobs(_ context.Context, before time.Time, fn func(job.Job) error) error {
	s.mu.Lock()
	var out []job.Job
	for _, j := range s.jobs {
		if !j.Status.Terminal() && j.UpdatedAt.Before(before) {
			out = append(out, j)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b job.Job) int { return strings.Compare(string(a.ID), string(b.ID)) })
	for _, j := range out {
		if err := fn(j); err != nil {
			return err
		}
	}
	return nil
}
