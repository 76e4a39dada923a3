// The peer of `make bench`: Criticizer's intake workload done with the
// Powertools for AWS Lambda idempotency utility and its DynamoDB persistence
// layer, on the same DynamoDB Local and fauxqs. cmd/bench runs it with the
// same generated requests it gave Criticizer and reads one JSON result from
// stdout (the shape of cmd/bench's intakeResult).
//
// The handler does what Criticizer's intake does for a generic webhook:
// verify the HMAC signature and validate the body first (so an unsigned
// request never creates an idempotency record), then, made idempotent on
// the Idempotency-Key header with the body as the payload to validate (a
// key reused with another body is refused, as Criticizer's 422), write the
// job record with a conditional PutItem and enqueue the fetch stage to SQS.
//
// Every AWS call is counted by an SDK v3 middleware on the clients,
// attributed to the request kind (unique or duplicate) with
// AsyncLocalStorage.
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, PutCommand } from '@aws-sdk/lib-dynamodb';

const { values: args } = parseArgs({
  options: {
    warm: { type: 'string' },
    requests: { type: 'string' },
    concurrency: { type: 'string', default: '1' },
  },
});
const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};
const secret = Buffer.from(env('PEER_WEBHOOK_SECRET'));
const jobsTable = env('PEER_JOBS_TABLE');
const queueUrl = env('PEER_QUEUE_URL');

// --- counting -------------------------------------------------------------
const kind = new AsyncLocalStorage();
const counts = {}; // kind -> "Service.Op" -> {Calls, Items}
let counting = false;

function itemsWritten(op, input) {
  switch (op) {
    case 'PutItem':
    case 'UpdateItem':
    case 'DeleteItem':
      return 1;
    case 'TransactWriteItems':
      return (input.TransactItems ?? []).filter((t) => t.Put || t.Update || t.Delete).length;
    case 'BatchWriteItem':
      return Object.values(input.RequestItems ?? {}).reduce((n, r) => n + r.length, 0);
    default:
      return 0;
  }
}

function count(client) {
  client.middlewareStack.add(
    (next, context) => async (mwArgs) => {
      const service = (context.clientName ?? '').replace(/Client$/, '');
      const op = (context.commandName ?? '').replace(/Command$/, '');
      let ok = false;
      const t0 = process.hrtime.bigint();
      try {
        const out = await next(mwArgs);
        ok = true;
        return out;
      } finally {
        if (counting) {
          const k = kind.getStore() ?? 'other';
          const key = `${service}.${op}`;
          counts[k] ??= {};
          counts[k][key] ??= { Calls: 0, Items: 0, MS: 0 };
          counts[k][key].Calls++;
          counts[k][key].MS += Number(process.hrtime.bigint() - t0) / 1e6;
          if (ok && service === 'DynamoDB') counts[k][key].Items += itemsWritten(op, mwArgs.input);
        }
      }
    },
    { step: 'initialize', name: 'criticizerBenchCount' },
  );
  return client;
}

const endpoint = (svc) => process.env[`AWS_ENDPOINT_URL_${svc}`] || process.env.AWS_ENDPOINT_URL;
const ddb = count(new DynamoDBClient({ endpoint: endpoint('DYNAMODB') }));
const doc = DynamoDBDocumentClient.from(ddb);
const sqs = count(new SQSClient({ endpoint: endpoint('SQS') }));

// --- the handler ----------------------------------------------------------
const respond = (statusCode, body) => ({
  statusCode,
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
});
const problem = (statusCode, field, message) => respond(statusCode, { error: 'bad_request', field, message });

function verify(header, body) {
  if (!header?.startsWith('sha256=')) return false;
  const got = Buffer.from(header.slice(7), 'hex');
  const want = createHmac('sha256', secret).update(body).digest();
  return got.length === want.length && timingSafeEqual(got, want);
}

const text = (v, max) => typeof v === 'string' && v.trim() !== '' && v.length <= max && !/[\u0000-\u001f\u007f]/.test(v);
const httpURL = (v) => {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host !== '' && v.length <= 2048;
  } catch {
    return false;
  }
};
const email = (v) => typeof v === 'string' && /^[^\s@<>()]+@[^\s@<>()]+\.[^\s@<>()]+$/.test(v);
const known = new Set(['changelist_id', 'review_version', 'title', 'url', 'author', 'recipients', 'diff', 'diff_url']);

// validate checks the generic webhook contract (the fields Criticizer's
// adapter checks); it returns [field, message] or null.
function validate(b) {
  if (b === null || typeof b !== 'object' || Array.isArray(b)) return ['body', 'must be a JSON object'];
  for (const k of Object.keys(b)) if (!known.has(k)) return [k, 'is not a known field'];
  if (!text(b.changelist_id, 256)) return ['changelist_id', 'is required'];
  if (!Number.isInteger(b.review_version) || b.review_version < 1) return ['review_version', 'must be a positive integer'];
  if (!text(b.title, 1000)) return ['title', 'is required'];
  if (!httpURL(b.url)) return ['url', 'must be an absolute http or https URL'];
  if (!text(b.author, 1000)) return ['author', 'is required'];
  if (!Array.isArray(b.recipients) || b.recipients.length < 1 || b.recipients.length > 50) return ['recipients', '1 to 50 recipients'];
  for (const [i, r] of b.recipients.entries()) if (!email(r)) return [`recipients[${i}]`, 'must be an email address'];
  if ((b.diff === undefined) === (b.diff_url === undefined)) return ['diff', 'give one of diff or diff_url'];
  if (b.diff !== undefined && (typeof b.diff !== 'string' || b.diff.trim() === '' || b.diff.length > 1 << 20)) return ['diff', 'invalid'];
  if (b.diff_url !== undefined && !httpURL(b.diff_url)) return ['diff_url', 'must be an absolute http or https URL'];
  return null;
}

const sha256 = (s) => createHash('sha256').update(s).digest('hex');

const config = new IdempotencyConfig({
  eventKeyJmesPath: 'headers."idempotency-key"',
  payloadValidationJmesPath: 'body',
});
const persistenceStore = new DynamoDBPersistenceLayer({ tableName: env('PEER_IDEMPOTENCY_TABLE'), awsSdkV3Client: ddb });

// accept runs once per idempotency key: the job record, then the fetch
// message; the 202 it returns is stored and replayed for duplicates.
const accept = makeIdempotent(
  async (event) => {
    const b = JSON.parse(event.body);
    const now = new Date().toISOString();
    const jobId = sha256(`generic\n${b.changelist_id}\n${b.review_version}`).slice(0, 32);
    await doc.send(
      new PutCommand({
        TableName: jobsTable,
        Item: {
          pk: `JOB#${jobId}`, kind: 'job', job_id: jobId, source: 'generic', changelist_id: b.changelist_id,
          review_version: b.review_version, title: b.title, url: b.url, author: b.author,
          recipients: [...new Set(b.recipients.map((r) => r.toLowerCase()))], diff_url: b.diff_url ?? '',
          status: 'accepted', stage: 'fetch', attempts: {}, created_at: now, updated_at: now,
          idempotency_key_sha256: sha256(event.headers['idempotency-key']),
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: JSON.stringify({ job_id: jobId, stage: 'fetch' }) }));
    return respond(202, {
      job_id: jobId, status: 'accepted', changelist_id: b.changelist_id, review_version: b.review_version,
      links: { self: `/jobs/${jobId}` },
    });
  },
  { persistenceStore, config },
);

export async function handler(event, context) {
  const body = event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
  if (Buffer.byteLength(body) > 4 << 20) return problem(413, 'body', 'too large');
  if (!verify(event.headers['x-criticizer-signature'], body)) return problem(401, 'signature', 'signature does not match the body');
  const key = event.headers['idempotency-key'];
  if (!key || key.length > 255 || /[^\x20-\x7e]/.test(key)) return problem(400, 'Idempotency-Key', 'header is required');
  let b;
  try {
    b = JSON.parse(body);
  } catch {
    return problem(400, 'body', 'malformed JSON');
  }
  const bad = validate(b);
  if (bad) return problem(400, bad[0], bad[1]);
  config.registerLambdaContext(context);
  try {
    return await accept(event, context);
  } catch (err) {
    if (err?.name === 'IdempotencyValidationError') return problem(422, 'Idempotency-Key', 'key reused with another body');
    if (err?.name === 'IdempotencyAlreadyInProgressError') return respond(409, { error: 'in_progress' });
    return respond(503, { error: 'service_unavailable', message: err?.name ?? 'error' });
  }
}

// --- driving it -----------------------------------------------------------
function event(r) {
  const now = Date.now();
  return {
    version: '2.0', routeKey: '$default', rawPath: '/webhooks/generic', rawQueryString: '',
    headers: { 'content-type': 'application/json', 'idempotency-key': r.key, 'x-criticizer-signature': r.sig },
    body: r.body, isBase64Encoded: false,
    requestContext: {
      apiId: 'bench', stage: '$default', requestId: `bench-${now}`, timeEpoch: now,
      http: { method: 'POST', path: '/webhooks/generic', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'bench' },
    },
  };
}

function lambdaContext(i) {
  const deadline = Date.now() + 30_000;
  return {
    functionName: 'peer-intake', functionVersion: '$LATEST', awsRequestId: `req-${i}`, memoryLimitInMB: '128',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:peer-intake', logGroupName: '', logStreamName: '',
    callbackWaitsForEmptyEventLoop: true, getRemainingTimeInMillis: () => deadline - Date.now(),
    done() {}, fail() {}, succeed() {},
  };
}

async function drive(reqs, conc, done) {
  let next = 0;
  const worker = async () => {
    for (;;) {
      const i = next++;
      if (i >= reqs.length) return;
      const r = reqs[i];
      const t0 = process.hrtime.bigint();
      let status;
      try {
        const resp = await kind.run(r.dup ? 'dup' : 'unique', () => handler(event(r), lambdaContext(i)));
        status = resp.statusCode;
      } catch {
        status = 500;
      }
      done?.(i, Number(process.hrtime.bigint() - t0) / 1e6, status);
    }
  };
  await Promise.all(Array.from({ length: conc }, worker));
}

const conc = Number(args.concurrency);
const warm = JSON.parse(readFileSync(args.warm, 'utf8'));
const reqs = JSON.parse(readFileSync(args.requests, 'utf8'));
await drive(warm, conc);
counting = true;
const lat = new Array(reqs.length);
let errors = 0;
const t0 = process.hrtime.bigint();
await drive(reqs, conc, (i, d, status) => {
  lat[i] = d;
  if (status < 200 || status > 299) errors++;
});
const elapsed = Number(process.hrtime.bigint() - t0) / 1e6;
lat.sort((a, b) => a - b);
const pct = (p) => lat[Math.max(0, Math.min(lat.length - 1, Math.round(lat.length * p) - 1))];
const dup = reqs.filter((r) => r.dup).length;
process.stdout.write(
  JSON.stringify({
    requests: reqs.length, unique: reqs.length - dup, dup, errors, elapsed_ms: elapsed,
    p50_ms: pct(0.5), p99_ms: pct(0.99), calls: counts,
  }),
);
