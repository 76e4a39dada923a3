package retry

import "strings"

// awsCodes maps AWS error codes (smithy.APIError.ErrorCode) to classes. Codes
// are matched exactly after stripping a protocol namespace prefix
// ("com.amazonaws.sqs#QueueDoesNotExist") and a ":"-separated suffix.
//
// Choices worth explaining:
//   - LimitExceededException is RateLimited because SES uses it for the
//     sending quota, which refills (a send refused over the daily quota is
//     told apart by its message and classified QuotaExhausted by
//     internal/sesmail, R-RATE-3); TransactionInProgressException is
//     RateLimited because DynamoDB asks the caller to come back once the
//     transaction with the same token has finished.
//   - TransactionCanceledException is Conflict: within this system it is
//     almost always a ConditionalCheckFailed cancellation reason.
//   - MessageRejected (SES refused the content), AccountSuspendedException and
//     SendingPausedException (the account or configuration set may not send)
//     and MailFromDomainNotVerifiedException (the sending identity is not
//     verified) are PolicyRejected: none changes on retry, all need an
//     operator (R-STAGE-5 "Auth/config").
//   - BadRequestException is SchemaInvalid: SES v2 uses it for input that
//     fails validation, which only a corrected payload fixes.
var awsCodes = map[string]Class{
	// Throttling and quotas.
	"Throttling":                             RateLimited,
	"ThrottlingException":                    RateLimited,
	"ThrottledException":                     RateLimited,
	"RequestThrottled":                       RateLimited,
	"RequestThrottledException":              RateLimited,
	"TooManyRequestsException":               RateLimited,
	"ProvisionedThroughputExceededException": RateLimited,
	"RequestLimitExceeded":                   RateLimited,
	"SlowDown":                               RateLimited,
	"LimitExceededException":                 RateLimited,
	"TransactionInProgressException":         RateLimited,
	"KMSThrottlingException":                 RateLimited,
	"PriorRequestNotComplete":                RateLimited,

	// Upstream faults.
	"InternalError":               Upstream5xx,
	"InternalFailure":             Upstream5xx,
	"InternalServerError":         Upstream5xx,
	"InternalServerException":     Upstream5xx,
	"ServiceUnavailable":          Upstream5xx,
	"ServiceUnavailableException": Upstream5xx,
	"RequestTimeout":              NetworkTimeout,
	"RequestTimeoutException":     NetworkTimeout,

	// Optimistic-lock and transaction conflicts.
	"ConditionalCheckFailedException": Conflict,
	"TransactionConflictException":    Conflict,
	"TransactionCanceledException":    Conflict,
	"ConcurrentModificationException": Conflict,
	"OptimisticLockException":         Conflict,

	// Credentials and permissions.
	"AccessDenied":                AuthDenied,
	"AccessDeniedException":       AuthDenied,
	"UnrecognizedClientException": AuthDenied,
	"InvalidClientTokenId":        AuthDenied,
	"InvalidAccessKeyId":          AuthDenied,
	"ExpiredToken":                AuthDenied,
	"ExpiredTokenException":       AuthDenied,
	"InvalidSignatureException":   AuthDenied,
	"SignatureDoesNotMatch":       AuthDenied,
	"MissingAuthenticationToken":  AuthDenied,

	// Missing resources.
	"ResourceNotFoundException":               NotFound,
	"NotFoundException":                       NotFound,
	"AWS.SimpleQueueService.NonExistentQueue": NotFound,
	"QueueDoesNotExist":                       NotFound,
	"NoSuchKey":                               NotFound,
	"NoSuchBucket":                            NotFound,

	// SES refusals.
	"MessageRejected":                    PolicyRejected,
	"MailFromDomainNotVerifiedException": PolicyRejected,
	"AccountSuspendedException":          PolicyRejected,
	"SendingPausedException":             PolicyRejected,

	// Requests that must change before they can succeed.
	"BadRequestException":         SchemaInvalid,
	"ValidationException":         SchemaInvalid,
	"SerializationException":      SchemaInvalid,
	"InvalidParameterValue":       SchemaInvalid,
	"InvalidParameterException":   SchemaInvalid,
	"InvalidParameterCombination": SchemaInvalid,
	"MissingParameter":            SchemaInvalid,
	"InvalidMessageContents":      SchemaInvalid,
	// The same idempotency token was reused with different parameters: a
	// caller bug in deriving the token, not a race.
	"IdempotentParameterMismatch": SchemaInvalid,
}

// awsCodeClass returns the class for an AWS error code, if it is known.
func awsCodeClass(code string) (Class, bool) {
	if i := strings.LastIndexByte(code, '#'); i >= 0 {
		code = code[i+1:]
	}
	if i := strings.IndexByte(code, ':'); i >= 0 {
		code = code[:i]
	}
	c, ok := awsCodes[strings.TrimSpace(code)]
	return c, ok
}
