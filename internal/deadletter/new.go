package deadletter

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/criticizer/criticizer/internal/redact"
	"strconv"
	"strings"
	"time"

	"github.com/criticizer/criticizer/internal/retry"
)

// Failure is what a stage knows when it gives up on a message.
type Failure struct {
	Stage          string            // StageFetch, StageLLM or StageNotify
	JobID          string            // the job the message belongs to
	Err            error             // the last failure, classified with retry.Classify
	Attempts       int               // attempts made in this stage, first included (values < 1 count as 1)
	FirstFailureAt time.Time         // first failure in this stage; defaults to LastFailureAt
	LastFailureAt  time.Time         // this failure; defaults to FirstFailureAt
	Context        map[string]string // operational context; sanitized by New
	Message        Original          // the stage message as received; Body is redacted by New
}

// New builds the envelope for a failure. It is the only constructor and it
// always redacts: the error chain, every context value, the original body and
// every other free-text field go through Redact (R-STAGE-4), so no
// caller can forget. New never fails: a dead-letter path that can error has
// nowhere to send its own failure.
//
// SanitizedContext gets, on top of the caller's sanitized entries: stage,
// attempts, error_class, upstream_status, op, aws_request_id when known, and
// original_body_redacted / original_body_truncated when New had to alter the
// body (replay tooling must then not replay it verbatim).
func New(f Failure) Envelope {
	first, last := f.FirstFailureAt, f.LastFailureAt
	if first.IsZero() {
		first = last
	}
	if last.IsZero() || last.Before(first) {
		last = first
	}
	first, last = first.UTC(), last.UTC()

	class, retryable := retry.Unknown, retry.Unknown.Retryable()
	ce := retry.ClassifyAt(f.Err, last)
	if ce != nil {
		class, retryable = ce.Class, ce.Retryable()
	}
	attempts := max(f.Attempts, 1)

	ctx := SanitizeContext(f.Context)
	ctx["stage"] = clean(f.Stage, maxShort)
	ctx["attempts"] = strconv.Itoa(attempts)
	ctx["error_class"] = string(class)
	if ce != nil && ce.Status != 0 {
		ctx["upstream_status"] = strconv.Itoa(ce.Status)
	}
	if ce != nil && ce.Op != "" {
		ctx["op"] = clean(ce.Op, maxContextValue)
	}
	if rid, ok := errors.AsType[requestIDer](f.Err); ok && rid.ServiceRequestID() != "" {
		ctx["aws_request_id"] = clean(rid.ServiceRequestID(), maxContextValue)
	}

	orig := f.Message
	if orig.BodySHA256 == "" {
		sum := sha256.Sum256([]byte(orig.Body))
		orig.BodySHA256 = hex.EncodeToString(sum[:])
	} else {
		orig.BodySHA256 = clean(orig.BodySHA256, maxShort)
	}
	redacted := redact.Text(orig.Body)
	if redacted != orig.Body {
		ctx["original_body_redacted"] = "true"
	}
	if len(redacted) > maxBody {
		ctx["original_body_truncated"] = "true"
	}
	orig.Body = truncate(redacted, maxBody)
	id := EnvelopeID(f.Stage, orig.MessageID, first)
	orig.MessageID = clean(orig.MessageID, maxShort)
	orig.Queue = clean(orig.Queue, maxContextValue)

	var lastStack string
	if ce != nil {
		lastStack = describe(ce)
	} else {
		lastStack = "no error recorded"
	}

	return Envelope{
		SchemaVersion:    SchemaVersion,
		ID:               id,
		Stage:            clean(f.Stage, maxShort),
		ErrorClass:       string(class),
		Retryable:        retryable,
		LastStack:        clean(lastStack, maxStack),
		SanitizedContext: ctx,
		FirstFailureAt:   first,
		LastFailureAt:    last,
		Attempts:         attempts,
		JobID:            clean(f.JobID, maxShort),
		Original:         orig,
	}
}

// describe renders the error chain for last_stack: the message, the types of
// every error in the tree (indented by depth, which is what tells an
// operator where the failure came from) and the panic stack if any.
func describe(err error) string {
	var b strings.Builder
	b.WriteString(err.Error())
	b.WriteString("\nchain:")
	const maxNodes = 64
	type node struct {
		err   error
		depth int
	}
	stack := []node{{err, 1}}
	for n := 0; len(stack) > 0 && n < maxNodes; n++ {
		cur := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if cur.err == nil {
			continue
		}
		fmt.Fprintf(&b, "\n%s%T", strings.Repeat("  ", cur.depth), cur.err)
		switch u := cur.err.(type) {
		case interface{ Unwrap() error }:
			stack = append(stack, node{u.Unwrap(), cur.depth + 1})
		case interface{ Unwrap() []error }:
			kids := u.Unwrap()
			for i := len(kids) - 1; i >= 0; i-- {
				stack = append(stack, node{kids[i], cur.depth + 1})
			}
		}
	}
	if pe, ok := errors.AsType[*retry.PanicError](err); ok && len(pe.Stack) > 0 {
		b.WriteString("\npanic stack:\n")
		b.Write(pe.Stack)
	}
	return b.String()
}

// requestIDer is implemented by the AWS SDK's response errors.
type requestIDer interface {
	error
	ServiceRequestID() string
}
