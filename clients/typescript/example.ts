// A small program against the TypeScript types openapi-typescript
// generates from GRACE's /openapi.json (scripts/ts-client writes them to
// ./schema.ts next to this file and runs `tsc --strict`): it asks, reads
// the decision, the confidence and the first citation's source and page,
// follows an escalation as the asker, and claims it as a reviewer. If a
// response body were a bare object, or an operation id repeated, this
// would not compile.
import type { components, operations, paths } from "./schema";

type Schemas = components["schemas"];
type AskRequest = paths["/v1/ask"]["post"]["requestBody"]["content"]["application/json"];
type AskOutcome = operations["ask"]["responses"][200]["content"]["application/json"];
type Escalation = operations["claimEscalation"]["responses"][200]["content"]["application/json"];
type AskerView = operations["getEscalationForAsker"]["responses"][200]["content"]["application/json"];
type ApiError = Schemas["ErrorBody"];

async function call<T>(base: string, key: string, method: string, path: string, body?: unknown): Promise<T> {
  const init: RequestInit = {
    method,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
  }
  const response = await fetch(`${base}${path}`, init);
  if (!response.ok) {
    const error = (await response.json()) as ApiError;
    throw new Error(`${error.error.type}: ${error.error.message}`);
  }
  return (await response.json()) as T;
}

export async function ask(base: string, key: string, question: string): Promise<AskOutcome> {
  const request: AskRequest = { question, queue: true };
  return call<AskOutcome>(base, key, "POST", "/v1/ask", request);
}

/** "answer (0.94): handbook.pdf p. 2" */
export function summary(outcome: AskOutcome): string {
  const decision: Schemas["Decision"] = outcome.decision;
  const confidence: number = outcome.confidence;
  const first: Schemas["Citation"] | undefined = outcome.answer?.citations[0];
  const source: string = first?.source ?? "no source";
  const page: string = first?.page != null ? ` p. ${first.page}` : "";
  return `${decision} (${confidence.toFixed(2)}): ${source}${page}`;
}

export async function followAsAsker(base: string, key: string, outcome: AskOutcome): Promise<AskerView | null> {
  if (outcome.review_id == null || outcome.review_handle == null) {
    return null;
  }
  const handle = encodeURIComponent(outcome.review_handle);
  return call<AskerView>(base, key, "GET", `/v1/escalations/${outcome.review_id}?handle=${handle}&wait=30`);
}

export async function claim(base: string, reviewerToken: string, id: number): Promise<Escalation> {
  const escalation = await call<Escalation>(base, reviewerToken, "POST", `/v1/review/escalations/${id}/claim`);
  const status: Schemas["Status"] = escalation.status;
  const claimedBy: string | null | undefined = escalation.claimed_by;
  console.log(`escalation ${escalation.id} is ${status} by ${claimedBy ?? "nobody"}: ${escalation.question}`);
  return escalation;
}
