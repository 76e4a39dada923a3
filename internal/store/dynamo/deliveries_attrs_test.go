package dynamo

import (
	"reflect"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/store/dynamo/schema"
)

// The outbox's expressions name attributes by constant; each must be a
// field of a row as stored (rowRecord), or a guard would test an
// attribute no row ever has and always pass.
func TestDeliveryAttrs_MatchRowTags(t *testing.T) {
	tags := map[string]bool{}
	rt := reflect.TypeOf(rowRecord{})
	for i := 0; i < rt.NumField(); i++ {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("dynamodbav"), ",")
		tags[name] = true
	}
	for _, a := range []string{attrDeliveryID, attrStatus, attrAttempts, attrLeaseUntil, attrClaimToken,
		attrNotificationID, attrNotifiedAt, attrLastErrorClass, attrSkipReason, attrProviderMessageID,
		attrEvidenceSendAt, attrEvidenceDeliveryAt, attrEvidenceBounceAt, attrEvidenceComplaintAt,
		attrEvidenceRejectAt, attrBounceType, attrLastBounceAt, attrBounceResends, attrBouncedMessageIDs,
		attrDuplicateMessageIDs, attrEvidenceCheckedAt, attrResentWithoutEvidence, attrResolution,
		attrUpdatedAt, schema.Sweep, attrMessage, attrRecipient, attrCreatedAt, attrDigest, attrPeriod, attrDueAt, attrEntries,
		attrStandsOn, attrDependents, attrRevivedFrom} {
		if !tags[a] {
			t.Errorf("attribute %q is not a dynamodbav tag of rowRecord", a)
		}
	}
}
