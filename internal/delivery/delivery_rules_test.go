package delivery_test

import (
	"regexp"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
)

var deliveryIDPattern = regexp.MustCompile(`^d_[a-z2-7]{32}$`)

// R-OUTBOX-1: "Notification dedupe MUST be enforced by outbox/delivery-log
// uniqueness on (changelist_id, recipient, review_version). This key defines
// the unique intent 'recipient has been notified for this changelist
// version'." R-OUTBOX-10: "Provider idempotency keys SHOULD be deterministic and
// derived from the same tuple."
func TestID_DeterministicPerTuple(t *testing.T) {
	a := delivery.ID("generic:billing-1042", "ann@example.com", 3)
	b := delivery.ID("generic:billing-1042", "ann@example.com", 3)
	if a != b {
		t.Fatalf("ID not deterministic: %s then %s", a, b)
	}
	if !deliveryIDPattern.MatchString(a) {
		t.Errorf("ID = %q; want it to match %s", a, deliveryIDPattern)
	}
}

// The delivery id is the delivery key and travels with the email as the
// provider idempotency token; rows written by one release must be found by
// the next, so the derivation is pinned (R-OUTBOX-1, R-OUTBOX-10). The expected value
// was computed independently:
// "d_" + lower(base32(sha256("8:delivery20:generic:billing-104215:ann@example.com1:3")[:20])).
func TestID_StableAcrossReleases(t *testing.T) {
	const want = "d_cm34ripgxie7jmxfci4nkk4646izl2za"
	if got := delivery.ID("generic:billing-1042", "Ann@Example.com", 3); got != want {
		t.Errorf("ID = %s; want %s", got, want)
	}
}

// The same reviewer written differently is the same intent: case and
// surrounding whitespace do not change the delivery id, so Ann@x and ann@x
// get one email, not two (R-OUTBOX-1).
func TestID_IndependentOfRecipientCaseAndSpaces(t *testing.T) {
	want := delivery.ID("generic:cl-7", "ann.lee@example.com", 2)
	for _, variant := range []string{
		"Ann.Lee@Example.com",
		"ANN.LEE@EXAMPLE.COM",
		"  ann.lee@example.com",
		"ann.lee@example.com \t",
		"\n Ann.Lee@EXAMPLE.com \r\n",
	} {
		if got := delivery.ID("generic:cl-7", variant, 2); got != want {
			t.Errorf("ID(%q) = %s; want %s (same as the normalized address)", variant, got, want)
		}
	}
}

// Each element of the tuple matters: a new review version creates "new
// delivery intents under new keys" (R-RERUN-1), and different changelists or
// recipients never share a row (R-OUTBOX-1).
func TestID_DiffersByChangelistRecipientVersion(t *testing.T) {
	type in struct {
		cl, rcpt string
		v        int
	}
	tests := []struct {
		name string
		a, b in
	}{
		{"review version (versioned rerun, R-RERUN-1)", in{"generic:cl-1", "a@example.com", 3}, in{"generic:cl-1", "a@example.com", 4}},
		{"changelist", in{"generic:cl-1", "a@example.com", 1}, in{"generic:cl-2", "a@example.com", 1}},
		{"changelist source", in{"generic:7", "a@example.com", 1}, in{"github:7", "a@example.com", 1}},
		{"recipient", in{"generic:cl-1", "a@example.com", 1}, in{"generic:cl-1", "b@example.com", 1}},
		{"recipient subaddress", in{"generic:cl-1", "a@example.com", 1}, in{"generic:cl-1", "a+x@example.com", 1}},
		{"digits moved from changelist to version", in{"generic:cl-1", "a@example.com", 12}, in{"generic:cl-11", "a@example.com", 2}},
		{"characters moved from changelist to recipient", in{"generic:cl-1a", "@example.com", 1}, in{"generic:cl-1", "a@example.com", 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := delivery.ID(tt.a.cl, tt.a.rcpt, tt.a.v)
			y := delivery.ID(tt.b.cl, tt.b.rcpt, tt.b.v)
			if x == y {
				t.Errorf("ID(%+v) == ID(%+v) == %s", tt.a, tt.b, x)
			}
		})
	}
}

// NormalizeRecipient is the delivery key's form of an address.
func TestNormalizeRecipient_TrimsAndLowers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ann@example.com", "ann@example.com"},
		{"Ann@Example.COM", "ann@example.com"},
		{"  ann@example.com\t\n", "ann@example.com"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := delivery.NormalizeRecipient(tt.in); got != tt.want {
			t.Errorf("NormalizeRecipient(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

// R-OUTBOX-3: "Retries MUST re-read the delivery row first: If notified_at
// is set, do not send again. If notified_at is null and notification_id is
// null, safe to attempt send. If notification_id exists but notified_at is
// null, treat as 'send may have happened' and recover via provider-id lookup
// before deciding to resend." R-OUTBOX-9: permanent failures "require operator or
// caller intervention"; R-RECON-1: rows under reconciliation get no "further
// sends". A sending row under another worker's live lease is waited for; one
// whose lease expired may have sent, so it is reconciled (R-OUTBOX-6 "Never mark
// failed permanently until reconciliation attempted").
func TestDecide_ReReadRules(t *testing.T) {
	now := time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)
	sentAt := now.Add(-time.Hour)
	live := now.Add(30 * time.Second)
	expired := now.Add(-time.Second)

	tests := []struct {
		name string
		row  delivery.Row
		want delivery.Action
	}{
		// notified_at set → never send again, whatever else the row says.
		{"notified_at set, status sent", delivery.Row{Status: delivery.StatusSent, NotificationID: "ses-1", NotifiedAt: sentAt}, delivery.Skip},
		{"notified_at set, status delivered", delivery.Row{Status: delivery.StatusDelivered, NotificationID: "ses-1", NotifiedAt: sentAt}, delivery.Skip},
		{"notified_at set but status still pending", delivery.Row{Status: delivery.StatusPending, NotifiedAt: sentAt}, delivery.Skip},
		{"notified_at set but status failed_transient", delivery.Row{Status: delivery.StatusFailedTransient, NotifiedAt: sentAt}, delivery.Skip},
		{"notified_at set while sending under a live lease", delivery.Row{Status: delivery.StatusSending, LeaseUntil: live, NotifiedAt: sentAt}, delivery.Skip},
		{"notified_at set while sending with an expired lease", delivery.Row{Status: delivery.StatusSending, LeaseUntil: expired, NotifiedAt: sentAt}, delivery.Skip},
		{"notified_at set on a failed_permanent row", delivery.Row{Status: delivery.StatusFailedPermanent, NotifiedAt: sentAt}, delivery.Skip},
		{"notified_at set without notification_id", delivery.Row{Status: delivery.StatusSent, NotifiedAt: sentAt}, delivery.Skip},

		// notification_id without notified_at → send may have happened.
		{"notification_id without notified_at, pending", delivery.Row{Status: delivery.StatusPending, NotificationID: "ses-1"}, delivery.Reconcile},
		{"notification_id without notified_at, failed_transient", delivery.Row{Status: delivery.StatusFailedTransient, NotificationID: "ses-1"}, delivery.Reconcile},
		{"notification_id without notified_at, sending, lease expired", delivery.Row{Status: delivery.StatusSending, NotificationID: "ses-1", LeaseUntil: expired}, delivery.Reconcile},

		// sending.
		{"sending under a live lease", delivery.Row{Status: delivery.StatusSending, LeaseUntil: live, ClaimToken: "other"}, delivery.Wait},
		{"sending, lease far in the future", delivery.Row{Status: delivery.StatusSending, LeaseUntil: now.Add(24 * time.Hour)}, delivery.Wait},
		{"sending, lease expired", delivery.Row{Status: delivery.StatusSending, LeaseUntil: expired}, delivery.Reconcile},
		{"sending, lease expires exactly now", delivery.Row{Status: delivery.StatusSending, LeaseUntil: now}, delivery.Reconcile},
		{"sending, no lease recorded", delivery.Row{Status: delivery.StatusSending}, delivery.Reconcile},

		// claimable.
		{"pending", delivery.Row{Status: delivery.StatusPending}, delivery.Claim},
		{"failed_transient", delivery.Row{Status: delivery.StatusFailedTransient, Attempts: 2, LastErrorClass: "throttled"}, delivery.Claim},
		{"pending with a stale lease from an old claim", delivery.Row{Status: delivery.StatusPending, LeaseUntil: live}, delivery.Claim},

		// held for an operator.
		{"failed_permanent", delivery.Row{Status: delivery.StatusFailedPermanent, LastErrorClass: "invalid_recipient"}, delivery.Hold},
		{"reconciling", delivery.Row{Status: delivery.StatusReconciling}, delivery.Hold},
		{"failed_permanent with notification_id", delivery.Row{Status: delivery.StatusFailedPermanent, NotificationID: "ses-1"}, delivery.Hold},
		{"reconciling with notification_id", delivery.Row{Status: delivery.StatusReconciling, NotificationID: "ses-1"}, delivery.Hold},
		{"unknown status", delivery.Row{Status: "bounced_soft"}, delivery.Hold},
		{"empty status", delivery.Row{}, delivery.Hold},

		// terminal without a send.
		{"suppressed", delivery.Row{Status: delivery.StatusSuppressed}, delivery.Skip},
		{"skipped_unsubscribed", delivery.Row{Status: delivery.StatusSkippedUnsubscribed}, delivery.Skip},
		{"skipped_no_email", delivery.Row{Status: delivery.StatusSkippedNoEmail}, delivery.Skip},
		{"skipped_domain", delivery.Row{Status: delivery.StatusSkippedDomain}, delivery.Skip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := delivery.Decide(tt.row, now); got != tt.want {
				t.Errorf("Decide(%+v) = %v; want %v", tt.row, got, tt.want)
			}
		})
	}
}

// R-OUTBOX-10: "A retry worker MUST always check persisted delivery state
// (notified_at, notification_id) before send." Claim — the only action that
// leads to a send — is returned only when both are empty.
func TestDecide_ClaimOnlyWhenNeitherNotifiedAtNorNotificationID(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	statuses := []delivery.Status{
		delivery.StatusPending, delivery.StatusSending, delivery.StatusSent, delivery.StatusDelivered,
		delivery.StatusFailedTransient, delivery.StatusFailedPermanent, delivery.StatusReconciling,
		delivery.StatusSuppressed, delivery.StatusSkippedUnsubscribed, delivery.StatusSkippedNoEmail, delivery.StatusSkippedDomain, "",
	}
	leases := []time.Time{{}, now.Add(-time.Minute), now.Add(time.Minute)}
	for _, st := range statuses {
		for _, lease := range leases {
			for _, notified := range []time.Time{{}, now.Add(-time.Hour)} {
				for _, nid := range []string{"", "ses-1"} {
					r := delivery.Row{Status: st, LeaseUntil: lease, NotifiedAt: notified, NotificationID: nid}
					got := delivery.Decide(r, now)
					if got == delivery.Claim && (!notified.IsZero() || nid != "") {
						t.Errorf("Decide(%+v) = claim; a send must not be attempted", r)
					}
					// A row under reconciliation (R-RECON-1) is held for an
					// operator whether or not notified_at is set; either way
					// it is never sent.
					want := delivery.Skip
					if st == delivery.StatusReconciling {
						want = delivery.Hold
					}
					if !notified.IsZero() && got != want {
						t.Errorf("Decide(%+v) = %v; notified_at is set, want %v", r, got, want)
					}
				}
			}
		}
	}
}

// Actions print as their names in logs.
func TestAction_String(t *testing.T) {
	want := map[delivery.Action]string{
		delivery.Skip: "skip", delivery.Claim: "claim", delivery.Wait: "wait",
		delivery.Reconcile: "reconcile", delivery.Hold: "hold",
	}
	for a, w := range want {
		if got := a.String(); got != w {
			t.Errorf("Action(%d).String() = %q; want %q", int(a), got, w)
		}
	}
}

// Claimable and Done partition the statuses the way the lifecycle says.
func TestStatus_ClaimableAndDone(t *testing.T) {
	tests := []struct {
		s               delivery.Status
		claimable, done bool
	}{
		{delivery.StatusPending, true, false},
		{delivery.StatusFailedTransient, true, false},
		{delivery.StatusSending, false, false},
		{delivery.StatusFailedPermanent, false, false},
		{delivery.StatusReconciling, false, false},
		{delivery.StatusSent, false, true},
		{delivery.StatusDelivered, false, true},
		{delivery.StatusSuppressed, false, true},
		{delivery.StatusSkippedUnsubscribed, false, true},
		{delivery.StatusSkippedNoEmail, false, true},
		{delivery.StatusSkippedDomain, false, true},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := tt.s.Claimable(); got != tt.claimable {
			t.Errorf("%q.Claimable() = %v; want %v", tt.s, got, tt.claimable)
		}
		if got := tt.s.Done(); got != tt.done {
			t.Errorf("%q.Done() = %v; want %v", tt.s, got, tt.done)
		}
	}
}

// R-OUTBOX-8: "Mark job succeeded only when all required recipients for
// the target review_version have delivery rows with notified_at set.
// Otherwise keep job retryable_failed or in_progress depending on retry
// policy." Rows held for an operator (failed_permanent, reconciling; R-OUTBOX-9,
// R-RECON-1) make the job Blocked once nothing else is in flight.
func TestSummarize_JobFinalization(t *testing.T) {
	at := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	sent := delivery.Row{Status: delivery.StatusSent, NotificationID: "ses-1", NotifiedAt: at}
	delivered := delivery.Row{Status: delivery.StatusDelivered, NotificationID: "ses-2", NotifiedAt: at}
	pending := delivery.Row{Status: delivery.StatusPending}
	sending := delivery.Row{Status: delivery.StatusSending, LeaseUntil: at.Add(time.Minute)}
	transient := delivery.Row{Status: delivery.StatusFailedTransient}
	mayHaveSent := delivery.Row{Status: delivery.StatusSending, NotificationID: "ses-3"}
	permanent := delivery.Row{Status: delivery.StatusFailedPermanent}
	reconciling := delivery.Row{Status: delivery.StatusReconciling}
	suppressed := delivery.Row{Status: delivery.StatusSuppressed}
	unsubscribed := delivery.Row{Status: delivery.StatusSkippedUnsubscribed}
	noEmail := delivery.Row{Status: delivery.StatusSkippedNoEmail}
	otherDomain := delivery.Row{Status: delivery.StatusSkippedDomain}
	notifiedButPending := delivery.Row{Status: delivery.StatusPending, NotifiedAt: at}

	tests := []struct {
		name string
		rows []delivery.Row
		want delivery.Outcome
	}{
		{"one recipient notified", []delivery.Row{sent}, delivery.Complete},
		{"all notified", []delivery.Row{sent, delivered, sent}, delivery.Complete},
		{"notified_at decides even if status lags", []delivery.Row{notifiedButPending}, delivery.Complete},
		{"notified and terminally skipped", []delivery.Row{sent, suppressed, unsubscribed, noEmail, otherDomain}, delivery.Complete},
		{"one still pending", []delivery.Row{sent, pending}, delivery.Incomplete},
		{"one in flight", []delivery.Row{sent, sending}, delivery.Incomplete},
		{"one failed transiently", []delivery.Row{transient, sent}, delivery.Incomplete},
		{"one may have been sent, awaiting reconciliation", []delivery.Row{sent, mayHaveSent}, delivery.Incomplete},
		{"one failed permanently, rest notified", []delivery.Row{sent, permanent}, delivery.Blocked},
		{"one under reconciliation, rest notified", []delivery.Row{reconciling, delivered}, delivery.Blocked},
		{"permanent failure but another still pending", []delivery.Row{permanent, pending}, delivery.Incomplete},
		{"permanent failure, pending row listed later", []delivery.Row{sent, permanent, sent, pending}, delivery.Incomplete},
		{"permanent failure but another in flight", []delivery.Row{sending, permanent}, delivery.Incomplete},
		{"all failed permanently", []delivery.Row{permanent, permanent}, delivery.Blocked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := delivery.Summarize(tt.rows); got != tt.want {
				t.Errorf("Summarize = %v; want %v", got, tt.want)
			}
		})
	}
}

// Summarize's verdict does not depend on the order rows were read in.
func TestSummarize_IndependentOfRowOrder(t *testing.T) {
	at := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	rows := []delivery.Row{
		{Status: delivery.StatusSent, NotifiedAt: at},
		{Status: delivery.StatusFailedPermanent},
		{Status: delivery.StatusSuppressed},
		{Status: delivery.StatusPending},
	}
	want := delivery.Summarize(rows)
	if want != delivery.Incomplete {
		t.Fatalf("Summarize = %v; want Incomplete", want)
	}
	// Every rotation.
	for i := range rows {
		rot := append(append([]delivery.Row{}, rows[i:]...), rows[:i]...)
		if got := delivery.Summarize(rot); got != want {
			t.Errorf("rotation %d: Summarize = %v; want %v", i, got, want)
		}
	}
}
