import { expressionBuilder, type Expression, type ExpressionBuilder, type RawBuilder, type SqlBool } from "kysely";
import type { Schema } from "../schema.js";

/**
 * What a coordinator's heartbeat may have to do, read in the statement that renews its lease
 * (`RunnerRepository.renew`): an idle coordinator learns that nothing is to be done without a
 * statement of its own (DESIGN §11, "an idle coordinator sends at most one statement a second").
 * The flags are judged by the lease clock in the statement; the times are returned as stored, for
 * the engine to judge by its own clock.
 */
export interface WorkDue {
  /** Actions running or waiting whose runner's lease has ended (or that have none), or runners whose lease has ended: recovery's. */
  recover: boolean;
  /** Idempotency keys in flight whose request's process is gone (`settleAbandoned`). */
  abandonedKeys: boolean;
  /** Payments verifying or settling: reconciliation may have one to finish. */
  paymentsInFlight: boolean;
  /** Queued actions no pace holds back. */
  queued: boolean;
  /** The earliest `not_before` of a queued action (it may start then, or now if it has passed). */
  nextNotBefore: string | undefined;
  /** The earliest deadline of an open challenge. */
  nextDeadline: string | undefined;
  /** When the earliest webhook delivery that may be sent next is due: its next attempt, or the end of another's claim on it. */
  nextDelivery: string | undefined;
  /** Which runners are registered (their number and the newest start): a change says the list is worth reading again. */
  runners: string;
  /** How many actions the renewed runner holds (running or waiting): more than it runs says one is held and not run (`unrunActions`). */
  held: number;
}

/** The survey's columns, for the `returning` of the renewal; `now` is the lease clock in the statement. */
export function workDueColumns(eb: ExpressionBuilder<Schema, "runners">, now: RawBuilder<string>) {
  const liveRunners = eb.selectFrom("runners as live").select("live.id").where("live.lease_expires_at", ">", now);
  const orphans = eb
    .selectFrom("actions")
    .select("actions.id")
    .where("actions.status", "in", ["running", "needs_input"])
    .where((w) => w.or([w("actions.runner_id", "is", null), w("actions.runner_id", "not in", liveRunners)]));
  const expiredRunners = eb.selectFrom("runners as gone").select("gone.id").where("gone.lease_expires_at", "<=", now);
  const abandonedKeys = eb
    .selectFrom("idempotency_keys")
    .select("idempotency_keys.key")
    .where("idempotency_keys.state", "=", "in_flight")
    .where((w) => w.or([w("idempotency_keys.runner_id", "is", null), w("idempotency_keys.runner_id", "not in", liveRunners)]));
  const paymentsInFlight = eb.selectFrom("payments").select("payments.id").where("payments.status", "in", ["verifying", "settling"]);
  const queued = eb.selectFrom("actions").select("actions.id").where("actions.status", "=", "queued").where("actions.not_before", "is", null);
  const nextNotBefore = eb
    .selectFrom("actions")
    .select((s) => s.fn.min("actions.not_before").as("at"))
    .where("actions.status", "=", "queued")
    .where("actions.not_before", "is not", null);
  const nextDeadline = nextDeadlineAt();
  const nextDelivery = nextDeliveryAt();
  const runnerCount = eb.selectFrom("runners as r").select((s) => s.fn.countAll<number>().as("n"));
  const newestRunner = eb.selectFrom("runners as r").select((s) => s.fn.max("r.started_at").as("at"));
  const held = eb
    .selectFrom("actions as mine")
    .select((s) => s.fn.countAll<number>().as("n"))
    .whereRef("mine.runner_id", "=", "runners.id")
    .where("mine.status", "in", ["running", "needs_input"]);
  return [
    eb.or([eb.exists(orphans), eb.exists(expiredRunners)]).as("recover"),
    eb.exists(abandonedKeys).as("abandoned_keys"),
    eb.exists(paymentsInFlight).as("payments_in_flight"),
    eb.exists(queued).as("queued"),
    nextNotBefore.as("next_not_before"),
    nextDeadline.as("next_deadline"),
    nextDelivery.as("next_delivery"),
    runnerCount.as("runner_count"),
    newestRunner.as("newest_runner"),
    held.as("held"),
  ] as const;
}

/**
 * The earliest deadline of an open challenge whose action waits at `needs_input` (what
 * `expireOverdueChallenges` can fail): when the deadline sweep has something to do next. A scalar
 * subquery.
 */
export function nextDeadlineAt() {
  return expressionBuilder<Schema, never>()
    .selectFrom("challenges as c")
    .innerJoin("actions as a", "a.id", "c.action_id")
    .select((s) => s.fn.min("c.expires_at").as("at"))
    .where("c.state", "=", "open")
    .where("a.status", "=", "needs_input");
}

/**
 * When the earliest webhook delivery that may be sent next is due, as `WebhookRepository.claimDue`
 * picks them (pending, to an endpoint not disabled, the first of its action's for the endpoint):
 * its next attempt, or the end of another dispatcher's claim on it. A scalar subquery.
 */
export function nextDeliveryAt() {
  return expressionBuilder<Schema, never>()
    .selectFrom("webhook_deliveries as d")
    .innerJoin("webhook_endpoints as w", "w.id", "d.endpoint_id")
    .select((s) =>
      s.fn
        .min<string | null>(
          s
            .case()
            .when(s.and([s("d.leased_until", "is not", null), s("d.leased_until", ">", s.ref("d.next_attempt_at"))]))
            .then(s.ref("d.leased_until"))
            .else(s.ref("d.next_attempt_at"))
            .end(),
        )
        .as("at"),
    )
    .where("d.state", "=", "pending")
    .where("w.disabled_at", "is", null)
    .where(firstOfItsSubject);
}

/**
 * The delivery `d` is the first still pending of its subject for its endpoint: a subject's
 * deliveries go out in the order of their events, each once the one before has ended.
 */
export function firstOfItsSubject(eb: ExpressionBuilder<Schema & { d: Schema["webhook_deliveries"] }, "d">): Expression<SqlBool> {
  return eb.not(
    eb.exists(
      eb
        .selectFrom("webhook_deliveries as p")
        .select("p.id")
        .whereRef("p.endpoint_id", "=", "d.endpoint_id")
        .whereRef("p.subject_id", "=", "d.subject_id")
        .where("p.state", "=", "pending")
        .whereRef("p.event_seq", "<", "d.event_seq"),
    ),
  );
}

interface WorkDueRow {
  recover: unknown;
  abandoned_keys: unknown;
  payments_in_flight: unknown;
  queued: unknown;
  next_not_before: string | null;
  next_deadline: string | null;
  next_delivery: string | null;
  runner_count: number | string | bigint | null;
  newest_runner: string | null;
  held: number | string | bigint | null;
}

/** The survey's row as the engine reads it (booleans: PostgreSQL's `true`, SQLite's 1). */
export function toWorkDue(row: WorkDueRow): WorkDue {
  return {
    recover: Boolean(row.recover),
    abandonedKeys: Boolean(row.abandoned_keys),
    paymentsInFlight: Boolean(row.payments_in_flight),
    queued: Boolean(row.queued),
    nextNotBefore: row.next_not_before ?? undefined,
    nextDeadline: row.next_deadline ?? undefined,
    nextDelivery: row.next_delivery ?? undefined,
    runners: `${Number(row.runner_count ?? 0)}/${row.newest_runner ?? ""}`,
    held: Number(row.held ?? 0),
  };
}
