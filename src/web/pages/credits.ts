import type { Hono } from "hono";
import { html } from "hono/html";
import { z } from "zod";
import { parse } from "../../api/request-parts.js";
import { AppError } from "../../domain/errors.js";
import type { Engine } from "../../engine/engine.js";
import type { LedgerEntry } from "../../store/records.js";
import { page, table, time, type Html } from "../layout.js";
import { may, type WebEnv } from "../session.js";

const PAGE_SIZE = 50;

const KIND_WORDS: Record<LedgerEntry["kind"], string> = { grant: "Granted", top_up: "Top-up (x402)", hold: "Held for an action", release: "Returned from an action" };

const TopUpRequest = z.strictObject({
  credits: z.int().min(1),
  payment_signature: z.string().min(1).max(20_000).optional(),
});

/** Credits: the balance, the ledger, and a top-up paid from a browser wallet. */
export function creditRoutes(web: Hono<WebEnv>, engine: Engine): void {
  web.get("/credits", async (c) => {
    const { principal } = c.get("session");
    const before = c.req.query("before");
    const entries = await engine.ledger(principal, { limit: PAGE_SIZE, before: before && /^\d{1,15}$/.test(before) ? Number(before) : undefined });
    const older = entries.length === PAGE_SIZE ? `/app/credits?before=${entries.at(-1)!.seq}` : undefined;
    return c.html(
      page({
        title: "Credits",
        viewer: c.get("viewer"),
        section: "credits",
        notice: c.req.query("done") === "top_up" ? "Top-up paid: the credits are in the balance, and the ledger names the transaction." : undefined,
        body: html`<h1>Credits</h1>
<div class="grid">
<section class="card" aria-labelledby="balance-title">
  <h2 id="balance-title">Balance</h2>
  <p class="big"><span id="balance">${await engine.balance(principal)}</span> <span class="note">credits</span></p>
  <p class="note">An action holds its price when it starts; a free outcome (see the action reference) gives it back.</p>
</section>
${may(principal, "pay") ? topUpCard(engine) : html`<p class="note">Only admin keys top up credits.</p>`}
</div>
<section aria-labelledby="ledger-title">
<h2 id="ledger-title">Ledger</h2>
${table({
  caption: "Credit ledger, newest first",
  rows: entries,
  empty: "No entries.",
  columns: [
    { title: "When", cell: (entry) => time(entry.created_at) },
    { title: "What", cell: (entry) => KIND_WORDS[entry.kind] },
    { title: "Credits", cell: (entry) => (entry.amount > 0 ? `+${entry.amount}` : String(entry.amount)) },
    {
      title: "For",
      cell: (entry) =>
        entry.action_id
          ? html`<a href="/app/actions/${entry.action_id}">${entry.action_id}</a>`
          : entry.transaction
            ? html`transaction <code>${entry.transaction}</code>`
            : entry.reference?.startsWith("welcome:")
              ? "welcome credits of a new workspace"
              : html`<code>${entry.reference ?? ""}</code>`,
    },
  ],
})}
${older ? html`<p class="pager"><a href="${older}">Older entries</a></p>` : ""}
</section>`,
      }),
    );
  });

  // The page's script: without a payment the requirements to sign (402), with one the credits added.
  web.post("/credits/top-ups", async (c) => {
    const { principal } = c.get("session");
    const body = parse(TopUpRequest, await c.req.json().catch(() => undefined), "body");
    const outcome = await engine.topUps.topUp(principal, body.credits, body.payment_signature);
    if (outcome.kind === "payment_required") {
      const accepted = outcome.paymentRequired.accepts[0]!;
      const message = outcome.reason ?? `Pay ${formatAmount(accepted.amount, accepted.extra?.name)} on ${accepted.network} for ${body.credits} credits.`;
      return c.json({ error: { code: "payment_required", message }, payment_required: outcome.paymentRequired }, 402);
    }
    return c.json({ balance: outcome.balance, credited: outcome.credited, transaction: outcome.transaction });
  });
}

function topUpCard(engine: Engine): Html {
  let price: string;
  try {
    const requirements = engine.topUps.requirements(1);
    price = `${formatAmount(requirements.amount, requirements.extra?.name)} per credit, on ${requirements.network}`;
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return html`<section class="card" aria-labelledby="top-up-title"><h2 id="top-up-title">Top up</h2><p>${error.message}</p></section>`;
  }
  return html`<form class="card" id="top-up" aria-labelledby="top-up-title">
  <h2 id="top-up-title">Top up</h2>
  <p class="note">Paid with x402 from your browser wallet: ${price}. The wallet signs a transfer authorization; nothing is paid until the service has settled it, and the credits are added then.</p>
  <label for="credits">Credits to buy</label>
  <input type="number" id="credits" name="credits" min="1" max="${engine.topUps.maxCredits}" value="100" required>
  <button type="submit">Pay with browser wallet</button>
  <p class="note" id="top-up-result" role="status" aria-live="polite"></p>
</form>`;
}

/** USDC (the x402 asset on EVM networks) has 6 decimals; another asset is shown in its base units. */
function formatAmount(amount: string, assetName: unknown): string {
  if (assetName !== "USDC") return `${amount} base units of the asset`;
  const value = BigInt(amount);
  const whole = value / 1_000_000n;
  const fraction = (value % 1_000_000n).toString().padStart(6, "0").replace(/0+$/, "");
  return `${whole}${fraction ? `.${fraction}` : ""} USDC`;
}
