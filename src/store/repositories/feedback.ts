import type { Db } from "../database.js";
import type { Sealer } from "../crypto.js";

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

/** Feedback and the screenshots of pages at failure (sealed: they may show the account's private pages). */
export class FeedbackRepository {
  constructor(
    private readonly db: Db,
    private readonly sealer: Sealer,
  ) {}

  insert(feedback: Omit<FeedbackRecord, "has_screenshot">): void {
    this.db
      .prepare(
        `INSERT INTO feedback (id, workspace_id, key_id, message, action_id, platform, type, error_code, error_message, created_at)
         VALUES (@id, @workspace_id, @key_id, @message, @action_id, @platform, @type, @error_code, @error_message, @created_at)`,
      )
      .run(Object.fromEntries(Object.entries(feedback).map(([name, value]) => [name, value ?? null])));
  }

  get(id: string): FeedbackRecord | undefined {
    return this.#select("f.id = ?", [id])[0];
  }

  /** A workspace's feedback, newest first, after the `before` position; only about these accounts' actions when given. */
  list(workspaceId: string, limit: number, before?: { created_at: string; id: string }, accountIds?: readonly string[]): FeedbackRecord[] {
    return this.#select(
      `f.workspace_id = ? AND (f.created_at, f.id) < (?, ?)
       AND (? IS NULL OR f.action_id IN (SELECT a.id FROM actions a WHERE a.account_id IN (SELECT value FROM json_each(?))))
       ORDER BY f.created_at DESC, f.id DESC LIMIT ?`,
      [workspaceId, before?.created_at ?? "\uffff", before?.id ?? "\uffff", accountIds ? 1 : null, accountIds ? JSON.stringify(accountIds) : "[]", limit],
    );
  }

  #select(where: string, parameters: unknown[]): FeedbackRecord[] {
    const rows = this.db
      .prepare(`SELECT f.*, (s.action_id IS NOT NULL) AS has_screenshot FROM feedback f LEFT JOIN failure_screenshots s ON s.action_id = f.action_id WHERE ${where}`)
      .all(...parameters) as Record<string, unknown>[];
    return rows.map((row) => ({ ...(Object.fromEntries(Object.entries(row).map(([name, value]) => [name, value ?? undefined])) as unknown as FeedbackRecord), has_screenshot: row.has_screenshot === 1 }));
  }

  saveScreenshot(actionId: string, png: Buffer, now: string): void {
    this.db
      .prepare("INSERT INTO failure_screenshots (action_id, png_sealed, created_at) VALUES (?, ?, ?) ON CONFLICT (action_id) DO UPDATE SET png_sealed = excluded.png_sealed, created_at = excluded.created_at")
      .run(actionId, this.sealer.seal(png.toString("base64"), `screenshot:${actionId}`), now);
  }

  screenshot(actionId: string): Buffer | undefined {
    const sealed = this.db.prepare("SELECT png_sealed FROM failure_screenshots WHERE action_id = ?").pluck().get(actionId) as Buffer | undefined;
    return sealed && Buffer.from(this.sealer.open(sealed, `screenshot:${actionId}`), "base64");
  }
}
