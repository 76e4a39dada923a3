package dynamo

import (
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"github.com/criticizer/criticizer/internal/delivery"
)

// The delivery row's attribute names, as delivery.Row's dynamodbav tags
// spell them (TestDeliveryAttrs_MatchRowTags). The outbox's conditions and
// updates name them here once: a name mistyped in one expression would
// read as "attribute not set" and quietly pass a guard.
const (
	attrDeliveryID            = "delivery_id"
	attrStatus                = "status"
	attrAttempts              = "attempts"
	attrLeaseUntil            = "lease_until"
	attrClaimToken            = "claim_token"
	attrNotificationID        = "notification_id"
	attrNotifiedAt            = "notified_at"
	attrLastErrorClass        = "last_error_class"
	attrSkipReason            = "skip_reason"
	attrProviderMessageID     = "provider_message_id"
	attrEvidenceSendAt        = "evidence_send_at"
	attrEvidenceDeliveryAt    = "evidence_delivery_at"
	attrEvidenceBounceAt      = "evidence_bounce_at"
	attrEvidenceComplaintAt   = "evidence_complaint_at"
	attrEvidenceRejectAt      = "evidence_reject_at"
	attrBounceType            = "bounce_type"
	attrLastBounceAt          = "last_bounce_at"
	attrBounceResends         = "bounce_resends"
	attrBouncedMessageIDs     = "bounced_message_ids"
	attrDuplicateMessageIDs   = "duplicate_message_ids"
	attrEvidenceCheckedAt     = "evidence_checked_at"
	attrResentWithoutEvidence = "resent_without_evidence"
	attrResolution            = "resolution"
	attrUpdatedAt             = "updated_at"
	attrExpiresAt             = "expires_at"
	// The daily digest's (digests.go).
	attrRecipient = "recipient"
	attrCreatedAt = "created_at"
	attrDigest    = "digest"
	attrPeriod    = "period"
	attrDueAt     = "due_at"
	attrEntries   = "entries"
)

// evidenceAttrs are the attributes that hold provider evidence of a send.
var evidenceAttrs = []string{attrProviderMessageID, attrEvidenceSendAt, attrEvidenceDeliveryAt, attrEvidenceBounceAt,
	attrEvidenceComplaintAt, attrEvidenceRejectAt}

// setStatus is the update "status = s".
func setStatus(s delivery.Status) expression.UpdateBuilder {
	return expression.Set(expression.Name(attrStatus), expression.Value(string(s)))
}

// statusIs is the condition "status = s".
func statusIs(s delivery.Status) expression.ConditionBuilder {
	return expression.Name(attrStatus).Equal(expression.Value(string(s)))
}

// notSet is the condition that attr is absent (optional attributes are
// dropped when zero, so absent means "not set").
func notSet(attr string) expression.ConditionBuilder {
	return expression.AttributeNotExists(expression.Name(attr))
}

// rowExists is the condition that the row exists: an update without it
// would create a row from nothing.
func rowExists() expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name(attrDeliveryID))
}

// notSetOrEqual: attr is absent, or holds v.
func notSetOrEqual(attr string, v expression.OperandBuilder) expression.ConditionBuilder {
	return expression.Or(notSet(attr), expression.Name(attr).Equal(v))
}

// notInSet: the string set attr is absent or does not hold v.
func notInSet(attr, v string) expression.ConditionBuilder {
	return expression.Or(notSet(attr), expression.Not(expression.Contains(expression.Name(attr), v)))
}

// leaseExpired: the claim's lease ended before now (a stored timestamp).
func leaseExpired(now string) expression.ConditionBuilder {
	return expression.Name(attrLeaseUntil).LessThan(expression.Value(now))
}

// claimHeld is the claim-token guard: the row is in `sending` under this
// worker's claim. Only the claimant marks or releases a row it sends.
func claimHeld(token string) expression.ConditionBuilder {
	return statusIs(delivery.StatusSending).And(expression.Name(attrClaimToken).Equal(expression.Value(token)))
}

// noEvidence is the condition that no provider event names the row.
func noEvidence() expression.ConditionBuilder {
	c := notSet(evidenceAttrs[0])
	for _, a := range evidenceAttrs[1:] {
		c = c.And(notSet(a))
	}
	return c
}

// neverSent is the "never sent" guard: no notified_at, no notification_id
// (R-OUTBOX-3: "safe to attempt send" only then) and no provider evidence.
// A row that passes it may be sent, or settled without a send.
func neverSent() expression.ConditionBuilder {
	return notSet(attrNotifiedAt).And(notSet(attrNotificationID)).And(noEvidence())
}

// dropClaim removes a claim's lease and token: the row is no longer
// being sent by anyone.
func dropClaim(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(expression.Name(attrLeaseUntil)).Remove(expression.Name(attrClaimToken))
}

// remove removes each of attrs.
func remove(upd expression.UpdateBuilder, attrs ...string) expression.UpdateBuilder {
	for _, a := range attrs {
		upd = upd.Remove(expression.Name(a))
	}
	return upd
}
