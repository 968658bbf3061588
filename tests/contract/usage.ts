// Compiled (tsc --noEmit --strict) against the types openapi-typescript
// generates from /openapi.json: proof that a client generator accepts the
// document and that its schemas come out as usable types.
import type { components, operations, paths } from "./storhd";

type Schemas = components["schemas"];

const rec: Schemas["Record"] = {
  id: "01a236f1-93d5-7341-b5fd-b1c269a6b793",
  data: { title: "hello" },
};

const err: Schemas["Error"] = {
  error: { status: 404, code: "not_found", message: "Record not found" },
};

const query: Schemas["Query"] = {
  where: [{ field: "n", op: "between", value: [1, 3] }, { or: [[{ field: "a", op: "exists" }]] }],
  orderBy: [{ field: "n", dir: "desc" }],
  limit: 10,
  cursor: null,
};

type GetDoc = operations["getDoc"];
type GetDocOk = GetDoc["responses"][200]["content"]["application/json"];
type ListRow = paths["/v1/docs/{collection}"]["get"]["responses"][200]["content"]["application/x-ndjson"];
type ClaimOk = operations["claimJobs"]["responses"][200]["content"]["application/json"];

const got: GetDocOk = rec;
const row: ListRow = rec;
const claimed: ClaimOk = { jobs: [{ id: rec.id, payload: { to: "a@example.org" } }] };
const notFound: GetDoc["responses"][404]["content"]["application/json"] = err;

export const used = [got, row, claimed, notFound, query];
