package awsclient

// Who retries each AWS operation, and why. An operation is retried by at
// most one layer, and by the SDK only when repeating it is harmless: the
// SDK's retry loop resends a request whose answer was lost after the
// service did the work, so an operation that is not idempotent must never
// be in it.
//
//	client / operation                       retried by     why
//	SES v2 SendEmail                         nobody below   not idempotent: SES has no idempotency key, and an
//	                                         the outbox     accepted message whose answer was lost would be sent
//	                                                        twice. SDKAttemptsSES = 1; a failed call is settled
//	                                                        by the outbox from provider evidence (notify.Notify)
//	SES v2 GetAccount (notify: the           the SDK        a read: the SDK's standard 3 attempts, set on the call
//	  account's quota, sesmail.ReadQuota)                   (the SES client makes one attempt per call otherwise)
//	DynamoDB TransactWriteItems (intake,     the SDK; the   the store sets a fresh ClientRequestToken on each call it
//	  rerun)                                 store after a  makes, and the SDK's retries of that call keep it, so
//	                                         cancellation   DynamoDB deduplicates them for 10 minutes; a call
//	                                                        DynamoDB cancelled (TransactionConflict) wrote nothing,
//	                                                        and the store's retry is a new transaction with a new
//	                                                        token (store.txToken, R-STORE-2)
//	DynamoDB conditional Put/UpdateItem      the SDK        the condition makes a repeat fail instead of applying
//	  (outbox claim, mark, release, ...)                    twice; the store reads a failed condition back and
//	                                                        recognises its own write (store.Deliveries.Claim)
//	DynamoDB UpdateItem ADD on the send-     nobody (the    a repeated ADD would count a slot twice;
//	  rate window (ratelimit.Dynamo)         limiter moves  RetryMaxAttempts 1 on that call
//	                                         to the next
//	                                         window)
//	DynamoDB UpdateItem ADD of reviewers     the SDK        string sets: a repeated ADD adds nothing; the
//	  added to a version, and of the                        added_rev counter counted twice only has notify
//	  directory's unknown list                              look at the job once more (store.Jobs.AddReviewers)
//	DynamoDB PutItem of a reviewer roster    the SDK        conditional on the roster's rev: a repeat fails and
//	  (rev), of a directory entry                           the store merges again, events are order-free
//	                                                        (store.Rosters.Apply); a directory entry is a plain
//	                                                        overwrite with the same item
//	DynamoDB GetItem, BatchGetItem, Query,   the SDK        reads
//	  Scan
//	SQS SendMessage (next stage, deferral)   the SDK        a repeat is a duplicate message; every stage is
//	                                                        idempotent and SQS is at-least-once anyway
//	SQS Delete/ChangeMessageVisibility,      the SDK        idempotent
//	  ReceiveMessage
//	S3 PutObject/GetObject (diffs)           the SDK        content-addressed keys: a repeat writes the same bytes
//	SNS Publish (local SES event bridge)     the SDK        feedback tolerates duplicate events
//	Secrets Manager GetSecretValue (init)    the SDK        read
//	Bedrock Runtime Converse                 the stage      RetryMaxAttempts 1: the stage runner's backoff and
//	                                         runner         budget own retries; SDK retries would multiply them
//	OpenAI-compatible chat completions,      the stage      plain net/http with no retries
//	  GitHub/GitLab/Gerrit REST, diff_url    runner
//
// Every other failure of a stage (a retried-out throttle, a 5xx) reaches
// the stage runner, which backs off and retries the whole stage within its
// budget; stages are idempotent.

// SDKAttemptsSES is the SES v2 client's RetryMaxAttempts: one attempt, no
// SDK retries (see above).
const SDKAttemptsSES = 1
