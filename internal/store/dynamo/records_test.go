package dynamo

import (
	"reflect"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
	"github.com/criticizer/criticizer/internal/vote"
)

// Each record mirrors its domain type field for field: a value with every
// field set (nested records, pointers, slices and maps included) goes to
// its record and back unchanged. A field added to a domain type and not
// to its record panics here, before any item is written without it.
// Rules: R-LAYER-2.
func TestRecords_MatchTheirDomainTypes(t *testing.T) {
	check := func(name string, v, back any) {
		t.Helper()
		if !reflect.DeepEqual(v, back) {
			t.Errorf("%s changed through its record:\n got %+v\nwant %+v", name, back, v)
		}
	}
	j := filled[job.Job](t)
	check("job.Job", j, stored[job.Job](stored[jobRecord](j)))
	f := filled[job.Failure](t)
	check("job.Failure", f, stored[job.Failure](stored[failureRecord](f)))
	rs := filled[job.RepoSettings](t)
	check("job.RepoSettings", rs, stored[job.RepoSettings](stored[repoSettingsRecord](rs)))
	r := filled[delivery.Row](t)
	check("delivery.Row", r, stored[delivery.Row](stored[rowRecord](r)))
	ro := filled[reviewers.Roster](t)
	check("reviewers.Roster", ro, stored[reviewers.Roster](stored[map[string]rosterMarkRecord](ro)))
	m := filled[vote.Marks](t)
	check("vote.Marks", m, stored[vote.Marks](stored[map[string]voteMarkRecord](m)))
	dl := filled[store.DeadLetterRecord](t)
	check("store.DeadLetterRecord", dl, stored[store.DeadLetterRecord](stored[deadLetterRecord](dl)))
	n := filled[[]store.DeliveryNote](t)
	check("[]store.DeliveryNote", n, stored[[]store.DeliveryNote](stored[[]deliveryNoteRecord](n)))
	sr := filled[store.SourceRef](t)
	check("store.SourceRef", sr, stored[store.SourceRef](stored[sourceRefRecord](sr)))
	// Nil stays nil: an absent list or map is not stored as an empty one.
	if got := stored[jobRecord](job.Job{}); got.Recipients != nil || got.LastError != nil || got.Settings != nil || got.Attempts != nil {
		t.Errorf("a zero job's record has non-nil fields: %+v", got)
	}
}

// The records' attributes are the names (and encoding options) the
// domain types' tags gave them when the deployed tables were written:
// renaming one orphans every stored item's value.
// Rules: R-LAYER-2.
func TestRecords_AttributeNamesAsDeployed(t *testing.T) {
	want := map[reflect.Type][]string{
		reflect.TypeOf(jobRecord{}):             {"job_id", "source", "changelist_id", "review_version", "title", "description,omitempty", "url", "author", "repository,omitempty", "recipients", "added_recipients,stringset,omitempty", "added_rev,omitempty", "added_seen,omitempty", "unexpanded_teams,omitempty", "diff_url,omitempty", "diff_ref,omitempty", "diff_sha256,omitempty", "diff_truncated,omitempty", "status", "stage", "attempts", "last_error,omitempty", "dead_letter,omitempty", "critique,omitempty", "created_at", "updated_at", "rerun_of,omitempty", "explicit,omitempty", "repo_settings,omitempty", "settings_warnings,omitempty", "generated_at_base,omitempty", "diff_base_unmerged,omitempty", "context_ref,omitempty", "skipped,omitempty", "skip_reason,omitempty", "team_members_not_mailed,omitempty"},
		reflect.TypeOf(failureRecord{}):         {"stage", "error_class", "attempt", "at", "envelope_id,omitempty"},
		reflect.TypeOf(repoSettingsRecord{}):    {"ignore,omitempty", "instructions,omitempty", "min_severity,omitempty", "language,omitempty", "code_host_status_off,omitempty"},
		reflect.TypeOf(pathInstructionRecord{}): {"path", "text"},
		reflect.TypeOf(rowRecord{}):             {"delivery_id", "kind,omitempty", "job_id", "changelist_key", "recipient", "review_version", "status", "attempts", "lease_until,omitempty", "claim_token,omitempty", "notification_id,omitempty", "notified_at,omitempty", "last_error_class,omitempty", "skip_reason,omitempty", "message", "provider_message_id,omitempty", "evidence_send_at,omitempty", "evidence_delivery_at,omitempty", "evidence_bounce_at,omitempty", "bounce_type,omitempty", "evidence_complaint_at,omitempty", "evidence_reject_at,omitempty", "last_bounce_at,omitempty", "bounce_resends,omitempty", "bounced_message_ids,stringset,omitempty", "duplicate_message_ids,stringset,omitempty", "evidence_checked_at,omitempty", "resent_without_evidence,omitempty", "resolution,omitempty", "digest,omitempty", "period,omitempty", "due_at,omitempty", "entries,stringset,omitempty", "stands_on,omitempty", "dependents,stringset,omitempty", "revived_from,omitempty", "sweep,omitempty", "created_at", "updated_at"},
		reflect.TypeOf(messageRecord{}):         {"subject", "html", "text", "template_version", "content_sha256", "unsubscribe_url,omitempty", "thread,omitempty", "list_id,omitempty", "reason,omitempty", "severity,omitempty", "findings,omitempty", "reply_to,omitempty"},
		reflect.TypeOf(rosterMarkRecord{}):      {"name", "requested,omitempty", "reviewed,omitempty", "removed,omitempty"},
		reflect.TypeOf(voteMarkRecord{}):        {"c", "at"},
		reflect.TypeOf(deadLetterRecord{}):      {"envelope_id", "job_id", "stage", "error_class", "state", "envelope", "updated_at"},
		reflect.TypeOf(deliveryNoteRecord{}):    {"action", "note", "by", "at", "status"},
		reflect.TypeOf(sourceRefRecord{}):       {"source", "repo", "number", "head_sha", "base_sha,omitempty", "patchset", "reviewers", "labels,omitempty"},
	}
	for rt, tags := range want {
		var got []string
		for i := range rt.NumField() {
			got = append(got, rt.Field(i).Tag.Get("dynamodbav"))
		}
		if !reflect.DeepEqual(got, tags) {
			t.Errorf("%s stores\n %q\nwant\n %q", rt, got, tags)
		}
	}
}

// filled is a T with every field, element and entry set to something
// other than its zero value.
func filled[T any](t *testing.T) T {
	t.Helper()
	var v T
	fill(reflect.ValueOf(&v).Elem(), 1)
	return v
}

func fill(v reflect.Value, seed int) {
	if v.Type() == reflect.TypeOf(time.Time{}) {
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, seed, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), seed+i)
		}
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), seed)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), seed)
		fill(s.Index(1), seed+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, seed)
		fill(e, seed)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString("s" + string(rune('a'+seed%26)))
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(seed))
	case reflect.Uint8:
		v.SetUint(uint64(seed))
	case reflect.Bool:
		v.SetBool(true)
	default:
		panic("fill: " + v.Type().String())
	}
}

// The cost of a row's trip through its record, beside the DynamoDB call
// each conversion accompanies (make bench-micro prints it).
func BenchmarkStored_RowToRecordAndBack(b *testing.B) {
	var r delivery.Row
	fill(reflect.ValueOf(&r).Elem(), 1)
	for b.Loop() {
		_ = stored[delivery.Row](stored[rowRecord](r))
	}
}
