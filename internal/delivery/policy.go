package delivery

import "fmt"

// UncertainSend is what a send whose answer was lost does once the
// evidence path has caught up past it and no SES event names it
// (CRITICIZER_UNCERTAIN_SEND, R-EVIDENCE-9). The rule that resends it
// rests on an assumed bound on SES's publishing (R-EVIDENCE-7): an event
// later than the bound makes a second email. Some operators would rather
// hold such a send for a person than risk that.
type UncertainSend string

const (
	// ResendUncertain: send it again (the default). The reader may get the
	// email twice if its Send event was later than the bound; the feedback
	// function counts that case (LateSendEvents) and alarms.
	ResendUncertain UncertainSend = "resend"
	// HoldUncertain: never send it again without evidence. The row waits
	// for its events (which settle it as sent) or for an operator
	// (criticizer deliveries resolve | requeue); HeldDeliveries and
	// EvidenceLag alarm meanwhile.
	HoldUncertain UncertainSend = "hold"
)

// ParseUncertainSend reads a policy name; "" is the default, resend.
func ParseUncertainSend(s string) (UncertainSend, error) {
	switch p := UncertainSend(s); p {
	case "":
		return ResendUncertain, nil
	case ResendUncertain, HoldUncertain:
		return p, nil
	}
	return "", fmt.Errorf("want %s or %s, got %q", ResendUncertain, HoldUncertain, s)
}
