import type { ExpressionBuilder, Expression, SqlBool } from "kysely";
import type { Sealer } from "../crypto.js";
import type { Queries } from "../queries.js";
import type { Schema } from "../schema.js";

/** Feedback a client sent (DESIGN §13), with what it was about. */
export interface FeedbackRecord {
  id: string;
  workspace_id: string;
  key_id: string | undefined;
  message: string;
  action_id: string | undefined;
  platform: string | undefined;
  type: string | undefined;
  error_code: string | undefined;
  error_message: string | undefined;
  created_at: string;
  /** Whether the page at the action's failure was kept. */
  has_screenshot: boolean;
}

type Where = (eb: ExpressionBuilder<Schema & { f: Schema["feedback"]; s: Schema["failure_screenshots"] }, "f" | "s">) => Expression<SqlBool>;

/** Feedback and the screenshots of pages at failure (sealed: they may show the account's private pages). */
export class FeedbackRepository {
  constructor(
    private readonly q: Queries,
    private readonly sealer: Sealer,
  ) {}

  async insert(feedback: Omit<FeedbackRecord, "has_screenshot">): Promise<void> {
    await this.q.db
      .insertInto("feedback")
      .values({
        id: feedback.id,
        workspace_id: feedback.workspace_id,
        key_id: feedback.key_id ?? null,
        message: feedback.message,
        action_id: feedback.action_id ?? null,
        platform: feedback.platform ?? null,
        type: feedback.type ?? null,
        error_code: feedback.error_code ?? null,
        error_message: feedback.error_message ?? null,
        created_at: feedback.created_at,
      })
      .execute();
  }

  async get(id: string): Promise<FeedbackRecord | undefined> {
    return (await this.#select((eb) => eb("f.id", "=", id)))[0];
  }

  /** A workspace's feedback, newest first, after the `before` position; only about these accounts' actions when given. */
  list(workspaceId: string, limit: number, before?: { created_at: string; id: string }, accountIds?: readonly string[]): Promise<FeedbackRecord[]> {
    if (accountIds !== undefined && accountIds.length === 0) return Promise.resolve([]);
    return this.#select(
      (eb) =>
        eb.and([
          eb("f.workspace_id", "=", workspaceId),
          ...(before ? [eb(eb.refTuple("f.created_at", "f.id"), "<", eb.tuple(before.created_at, before.id))] : []),
          ...(accountIds ? [eb("f.action_id", "in", eb.selectFrom("actions as a").select("a.id").where("a.account_id", "in", accountIds))] : []),
        ]),
      limit,
    );
  }

  async #select(where: Where, limit?: number): Promise<FeedbackRecord[]> {
    let query = this.q.db
      .selectFrom("feedback as f")
      .leftJoin("failure_screenshots as s", "s.action_id", "f.action_id")
      .selectAll("f")
      .select((eb) => eb.case().when("s.action_id", "is", null).then(eb.lit(0)).else(eb.lit(1)).end().as("has_screenshot"))
      .where(where)
      .orderBy("f.created_at", "desc")
      .orderBy("f.id", "desc");
    if (limit !== undefined) query = query.limit(limit);
    const rows = await query.execute();
    return rows.map((row) => ({
      id: row.id,
      workspace_id: row.workspace_id,
      key_id: row.key_id ?? undefined,
      message: row.message,
      action_id: row.action_id ?? undefined,
      platform: row.platform ?? undefined,
      type: row.type ?? undefined,
      error_code: row.error_code ?? undefined,
      error_message: row.error_message ?? undefined,
      created_at: row.created_at,
      has_screenshot: row.has_screenshot === 1,
    }));
  }

  async saveScreenshot(actionId: string, png: Buffer, now: string): Promise<void> {
    await this.q.db
      .insertInto("failure_screenshots")
      .values({ action_id: actionId, png_sealed: this.sealer.seal(png.toString("base64"), `screenshot:${actionId}`), created_at: now })
      .onConflict((oc) => oc.column("action_id").doUpdateSet((eb) => ({ png_sealed: eb.ref("excluded.png_sealed"), created_at: eb.ref("excluded.created_at") })))
      .execute();
  }

  async screenshot(actionId: string): Promise<Buffer | undefined> {
    const row = await this.q.db.selectFrom("failure_screenshots").select("png_sealed").where("action_id", "=", actionId).executeTakeFirst();
    return row && Buffer.from(this.sealer.open(row.png_sealed, `screenshot:${actionId}`), "base64");
  }
}
