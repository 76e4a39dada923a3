package store

import "testing"

// R-EVIDENCE-6: "Permanent bounces and complaints from SES events suppress
// the address; transient bounces retry. SES's own suppression list
// responses are handled the same way": SES answers a send to an address on
// its account-level suppression list with a Permanent bounce of sub-type
// OnAccountSuppressionList (OnSuppressionList for the global list).
func TestEvent_Suppresses_PermanentBouncesAndComplaintsOnly(t *testing.T) {
	for _, c := range []struct {
		e    Event
		want bool
	}{
		{Event{Type: "Bounce", BounceType: "Permanent"}, true}, // General, NoEmail, OnAccountSuppressionList, OnSuppressionList...
		{Event{Type: "Complaint"}, true},
		{Event{Type: "Bounce", BounceType: "Transient"}, false},
		{Event{Type: "Bounce", BounceType: "Undetermined"}, false},
		{Event{Type: "Delivery"}, false},
		{Event{Type: "Send"}, false},
		{Event{Type: "Reject"}, false},
	} {
		if got := c.e.Suppresses(); got != c.want {
			t.Errorf("%+v: Suppresses = %v, want %v", c.e, got, c.want)
		}
	}
}
