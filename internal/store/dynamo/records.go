package dynamo

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/vote"
)

// The stored records: each domain type the tables hold (a job, a delivery
// row, a roster's and a reader's marks, the audit records, a source
// reference) has here a record with the same fields by name, carrying the
// attribute names as dynamodbav tags, so the domain packages and the
// contracts hold no storage tags and a tag renamed in a domain package
// cannot rename a stored attribute. The names are those the domain types
// carried when a deployed table was written; they never change (existing
// items would no longer read). stored converts between a record and its
// domain type; TestRecords_MatchTheirDomainTypes proves every pair has
// the same fields, and the adapter tests read each attribute back.

// stored converts v to R, a domain value to its record or back: the two
// types have the same fields by name, each of one type on both sides or
// itself such a pair (a nested record, or a pointer, slice or map of one).
// Why reflection rather than a conversion written out per field: a field
// added to the domain type and forgotten here fails every conversion
// (and the test) instead of silently not being stored; and why not Go's
// struct conversion: it cannot reach a nested record (job.Failure inside
// job.Job).
func stored[R, V any](v V) R {
	var r R
	copyFields(reflect.ValueOf(&r).Elem(), reflect.ValueOf(v))
	return r
}

// copyFields sets dst from src, which mirrors it (see stored); it panics
// on a field one side lacks, a programming error the test finds.
func copyFields(dst, src reflect.Value) {
	if src.Type() == dst.Type() {
		dst.Set(src)
		return
	}
	switch dst.Kind() {
	case reflect.Struct:
		if src.Kind() != reflect.Struct || src.NumField() != dst.NumField() {
			panic(fmt.Sprintf("stored: %s does not mirror %s", dst.Type(), src.Type()))
		}
		for i := range dst.NumField() {
			// Records list their fields in the domain type's order: look
			// there first, by name only when a type was reordered.
			name := dst.Type().Field(i).Name
			f := src.Field(i)
			if src.Type().Field(i).Name != name {
				f = src.FieldByName(name)
			}
			if !f.IsValid() {
				panic(fmt.Sprintf("stored: %s has no field %s of %s", src.Type(), name, dst.Type()))
			}
			copyFields(dst.Field(i), f)
		}
		return
	case reflect.Pointer:
		if src.Kind() == reflect.Pointer {
			if !src.IsNil() {
				p := reflect.New(dst.Type().Elem())
				copyFields(p.Elem(), src.Elem())
				dst.Set(p)
			}
			return
		}
	case reflect.Slice:
		if src.Kind() == reflect.Slice {
			if !src.IsNil() {
				s := reflect.MakeSlice(dst.Type(), src.Len(), src.Len())
				for i := range src.Len() {
					copyFields(s.Index(i), src.Index(i))
				}
				dst.Set(s)
			}
			return
		}
	case reflect.Map:
		if src.Kind() == reflect.Map {
			if !src.IsNil() {
				m := reflect.MakeMapWithSize(dst.Type(), src.Len())
				for it := src.MapRange(); it.Next(); {
					k, v := reflect.New(dst.Type().Key()).Elem(), reflect.New(dst.Type().Elem()).Elem()
					copyFields(k, it.Key())
					copyFields(v, it.Value())
					m.SetMapIndex(k, v)
				}
				dst.Set(m)
			}
			return
		}
	default:
		if src.Kind() == dst.Kind() && src.Type().ConvertibleTo(dst.Type()) {
			dst.Set(src.Convert(dst.Type()))
			return
		}
	}
	panic(fmt.Sprintf("stored: %s does not mirror %s", dst.Type(), src.Type()))
}

// jobRecord is job.Job as stored.
type jobRecord struct {
	ID                   job.ID              `dynamodbav:"job_id"`
	Source               string              `dynamodbav:"source"`
	ChangelistID         string              `dynamodbav:"changelist_id"`
	ReviewVersion        int                 `dynamodbav:"review_version"`
	Title                string              `dynamodbav:"title"`
	Description          string              `dynamodbav:"description,omitempty"`
	URL                  string              `dynamodbav:"url"`
	Author               string              `dynamodbav:"author"`
	Repository           string              `dynamodbav:"repository,omitempty"`
	Recipients           []string            `dynamodbav:"recipients"`
	AddedRecipients      []string            `dynamodbav:"added_recipients,stringset,omitempty"`
	AddedRev             int                 `dynamodbav:"added_rev,omitempty"`
	AddedSeen            int                 `dynamodbav:"added_seen,omitempty"`
	UnexpandedTeams      []string            `dynamodbav:"unexpanded_teams,omitempty"`
	DiffURL              string              `dynamodbav:"diff_url,omitempty"`
	DiffRef              string              `dynamodbav:"diff_ref,omitempty"`
	DiffSHA256           string              `dynamodbav:"diff_sha256,omitempty"`
	DiffTruncated        bool                `dynamodbav:"diff_truncated,omitempty"`
	Status               job.Status          `dynamodbav:"status"`
	Stage                job.Stage           `dynamodbav:"stage"`
	Attempts             job.Attempts        `dynamodbav:"attempts"`
	LastError            *failureRecord      `dynamodbav:"last_error,omitempty"`
	DeadLetter           *failureRecord      `dynamodbav:"dead_letter,omitempty"`
	Critique             []byte              `dynamodbav:"critique,omitempty"`
	CreatedAt            time.Time           `dynamodbav:"created_at"`
	UpdatedAt            time.Time           `dynamodbav:"updated_at"`
	RerunOf              job.ID              `dynamodbav:"rerun_of,omitempty"`
	Explicit             bool                `dynamodbav:"explicit,omitempty"`
	Settings             *repoSettingsRecord `dynamodbav:"repo_settings,omitempty"`
	SettingsWarnings     []string            `dynamodbav:"settings_warnings,omitempty"`
	GeneratedAtBase      []string            `dynamodbav:"generated_at_base,omitempty"`
	DiffBaseUnmerged     bool                `dynamodbav:"diff_base_unmerged,omitempty"`
	ContextRef           string              `dynamodbav:"context_ref,omitempty"`
	Skipped              string              `dynamodbav:"skipped,omitempty"`
	SkipReason           string              `dynamodbav:"skip_reason,omitempty"`
	TeamMembersNotMailed map[string]int      `dynamodbav:"team_members_not_mailed,omitempty"`
}

// failureRecord is job.Failure as stored.
type failureRecord struct {
	Stage      job.Stage `dynamodbav:"stage"`
	ErrorClass string    `dynamodbav:"error_class"`
	Attempt    int       `dynamodbav:"attempt"`
	At         time.Time `dynamodbav:"at"`
	EnvelopeID string    `dynamodbav:"envelope_id,omitempty"`
}

// repoSettingsRecord is job.RepoSettings as stored.
type repoSettingsRecord struct {
	Ignore       []string                `dynamodbav:"ignore,omitempty"`
	Instructions []pathInstructionRecord `dynamodbav:"instructions,omitempty"`
	MinSeverity  string                  `dynamodbav:"min_severity,omitempty"`
	Language     string                  `dynamodbav:"language,omitempty"`
	// CodeHostStatusOff: the repository's code_host_status: off.
	CodeHostStatusOff bool `dynamodbav:"code_host_status_off,omitempty"`
}

// pathInstructionRecord is job.PathInstruction as stored.
type pathInstructionRecord struct {
	Path string `dynamodbav:"path"`
	Text string `dynamodbav:"text"`
}

// rowRecord is delivery.Row as stored.
type rowRecord struct {
	ID                    string          `dynamodbav:"delivery_id"`
	Kind                  string          `dynamodbav:"kind,omitempty"`
	JobID                 job.ID          `dynamodbav:"job_id"`
	ChangelistKey         string          `dynamodbav:"changelist_key"`
	Recipient             string          `dynamodbav:"recipient"`
	ReviewVersion         int             `dynamodbav:"review_version"`
	Status                delivery.Status `dynamodbav:"status"`
	Attempts              int             `dynamodbav:"attempts"`
	LeaseUntil            time.Time       `dynamodbav:"lease_until,omitempty"`
	ClaimToken            string          `dynamodbav:"claim_token,omitempty"`
	NotificationID        string          `dynamodbav:"notification_id,omitempty"`
	NotifiedAt            time.Time       `dynamodbav:"notified_at,omitempty"`
	LastErrorClass        string          `dynamodbav:"last_error_class,omitempty"`
	SkipReason            string          `dynamodbav:"skip_reason,omitempty"`
	Message               messageRecord   `dynamodbav:"message"`
	ProviderMessageID     string          `dynamodbav:"provider_message_id,omitempty"`
	SendEventAt           time.Time       `dynamodbav:"evidence_send_at,omitempty"`
	DeliveredAt           time.Time       `dynamodbav:"evidence_delivery_at,omitempty"`
	BouncedAt             time.Time       `dynamodbav:"evidence_bounce_at,omitempty"`
	BounceType            string          `dynamodbav:"bounce_type,omitempty"`
	ComplainedAt          time.Time       `dynamodbav:"evidence_complaint_at,omitempty"`
	RejectedAt            time.Time       `dynamodbav:"evidence_reject_at,omitempty"`
	LastBounceAt          time.Time       `dynamodbav:"last_bounce_at,omitempty"`
	BounceResends         int             `dynamodbav:"bounce_resends,omitempty"`
	BouncedMessageIDs     []string        `dynamodbav:"bounced_message_ids,stringset,omitempty"`
	DuplicateMessageIDs   []string        `dynamodbav:"duplicate_message_ids,stringset,omitempty"`
	EvidenceCheckedAt     time.Time       `dynamodbav:"evidence_checked_at,omitempty"`
	ResentWithoutEvidence int             `dynamodbav:"resent_without_evidence,omitempty"`
	Resolution            string          `dynamodbav:"resolution,omitempty"`
	Digest                string          `dynamodbav:"digest,omitempty"`
	Period                string          `dynamodbav:"period,omitempty"`
	DueAt                 time.Time       `dynamodbav:"due_at,omitempty"`
	Entries               []string        `dynamodbav:"entries,stringset,omitempty"`
	StandsOn              string          `dynamodbav:"stands_on,omitempty"`
	Dependents            []string        `dynamodbav:"dependents,stringset,omitempty"`
	RevivedFrom           string          `dynamodbav:"revived_from,omitempty"`
	Sweep                 string          `dynamodbav:"sweep,omitempty"`
	CreatedAt             time.Time       `dynamodbav:"created_at"`
	UpdatedAt             time.Time       `dynamodbav:"updated_at"`
}

// messageRecord is delivery.Message as stored.
type messageRecord struct {
	Subject         string `dynamodbav:"subject"`
	HTML            string `dynamodbav:"html"`
	Text            string `dynamodbav:"text"`
	TemplateVersion string `dynamodbav:"template_version"`
	ContentSHA256   string `dynamodbav:"content_sha256"`
	UnsubscribeURL  string `dynamodbav:"unsubscribe_url,omitempty"`
	Thread          string `dynamodbav:"thread,omitempty"`
	ListID          string `dynamodbav:"list_id,omitempty"`
	Reason          string `dynamodbav:"reason,omitempty"`
	Severity        string `dynamodbav:"severity,omitempty"`
	Findings        string `dynamodbav:"findings,omitempty"`
	ReplyTo         string `dynamodbav:"reply_to,omitempty"`
}

// rosterMarkRecord is reviewers.Mark as stored.
type rosterMarkRecord struct {
	Name      string    `dynamodbav:"name"`
	Requested time.Time `dynamodbav:"requested,omitempty"`
	Reviewed  time.Time `dynamodbav:"reviewed,omitempty"`
	Removed   time.Time `dynamodbav:"removed,omitempty"`
}

// voteMarkRecord is vote.Mark as stored.
type voteMarkRecord struct {
	Choice vote.Choice `dynamodbav:"c"`
	At     time.Time   `dynamodbav:"at"`
}

// deadLetterRecord is store.DeadLetterRecord as stored.
type deadLetterRecord struct {
	EnvelopeID string          `dynamodbav:"envelope_id"`
	JobID      job.ID          `dynamodbav:"job_id"`
	Stage      job.Stage       `dynamodbav:"stage"`
	ErrorClass string          `dynamodbav:"error_class"`
	State      string          `dynamodbav:"state"`
	Envelope   json.RawMessage `dynamodbav:"envelope"`
	UpdatedAt  time.Time       `dynamodbav:"updated_at"`
}

// deliveryNoteRecord is store.DeliveryNote as stored.
type deliveryNoteRecord struct {
	Action string    `dynamodbav:"action"`
	Note   string    `dynamodbav:"note"`
	By     string    `dynamodbav:"by"`
	At     time.Time `dynamodbav:"at"`
	Status string    `dynamodbav:"status"`
}

// sourceRefRecord is store.SourceRef as stored.
type sourceRefRecord struct {
	Source    string   `dynamodbav:"source"`
	Repo      string   `dynamodbav:"repo"`
	Number    int      `dynamodbav:"number"`
	HeadSHA   string   `dynamodbav:"head_sha"`
	BaseSHA   string   `dynamodbav:"base_sha,omitempty"`
	Patchset  int      `dynamodbav:"patchset"`
	Reviewers []string `dynamodbav:"reviewers"`
	Labels    []string `dynamodbav:"labels,omitempty"`
}
